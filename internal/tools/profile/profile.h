/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Shared between profile.bpf.c and Go (bpf2go -type). */
#ifndef SONDE_PROFILE_H
#define SONDE_PROFILE_H

/* One aggregation bucket: a process, its name and its two stacks. */
struct profile_key {
	__u32 pid;
	__u32 tid;
	__u64 user_stack;   /* key in unwind_stacks, 0: none */
	__u64 kernel_stack; /* key in kstacks (a hash of its frames), 0: none */
	char comm[16];
};

/* Per-CPU error counters: the errors map's key (Go reads them by name). */
enum profile_error {
	ERR_USER_STACK = 0,   /* unused: unwind_counters count user walks */
	ERR_KERNEL_STACK = 1, /* a kernel stack not stored (kstacks full, or no memory) */
	ERR_COUNTS_FULL = 2,  /* counts map full: the sample is lost */
	ERR_MAX = 3,
};

/* A kernel stack in kstacks: return addresses, leaf first, zero padded. */
struct profile_kstack {
	__u64 ips[MAX_STACK_DEPTH];
};

#endif
