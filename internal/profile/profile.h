/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Shared between profile.bpf.c and Go (bpf2go -type). */
#ifndef SONDE_PROFILE_H
#define SONDE_PROFILE_H

/* One aggregation bucket: a process, its name and its two stacks. */
struct profile_key {
	__u32 pid;
	__u32 tid;
	__s32 user_stack;   /* id in stacks, or a negative errno */
	__s32 kernel_stack; /* id in stacks, or a negative errno */
	char comm[16];
};

/* Per-CPU error counters, indexes into the errors map. */
enum profile_error {
	ERR_USER_STACK = 0,   /* bpf_get_stackid failed for the user stack */
	ERR_KERNEL_STACK = 1, /* … for the kernel stack */
	ERR_COUNTS_FULL = 2,  /* counts map full: the sample is lost */
	ERR_MAX = 3,
};

#endif
