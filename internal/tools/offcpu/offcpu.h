/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Shared between offcpu.bpf.c and Go (bpf2go -type). */
#ifndef SONDE_OFFCPU_H
#define SONDE_OFFCPU_H

/* One bucket of blocked time: who blocked, where, and (with wakers) who
 * woke them from where. */
struct offcpu_key {
	__u32 pid;
	__u32 tid;              /* 0 unless keyed per thread */
	__u64 user_stack;       /* key of the blocked task's stack in unwind_stacks, 0: none */
	__u64 waker_user_stack; /* the waker's, 0: none */
	__s32 kernel_stack;     /* id in stacks, or a negative errno */
	__u32 waker_pid;        /* 0 without waker tracking or when unknown */
	__s32 waker_kernel_stack;
	__u32 unused;
	char comm[16];
	char waker_comm[16];
};

enum offcpu_error {
	OFFCPU_ERR_STACK = 0,  /* a stack walk failed */
	OFFCPU_ERR_FULL = 1,   /* a map was full: time lost */
	OFFCPU_ERR_MAX = 2,
};

#endif
