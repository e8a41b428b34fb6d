/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* stackcount's keys, shared by the BPF program and Go (bpfgen -type). */
#ifndef STACKCOUNT_H
#define STACKCOUNT_H

/* One counted stack: who hit the event, from where. */
struct stackcount_key {
	__u32 pid;
	__u32 tid;         /* 0 unless keyed per thread */
	__u64 user_stack;  /* key in unwind_stacks, 0: none */
	__s32 kernel_stack; /* id in stacks, or a negative errno */
	__u32 unused;
	char comm[16];
};

enum stackcount_error {
	STACKCOUNT_ERR_STACK,  /* a kernel stack walk failed */
	STACKCOUNT_ERR_FULL,   /* the counts map was full: hits lost */
	STACKCOUNT_ERR_MAX,
};

#endif
