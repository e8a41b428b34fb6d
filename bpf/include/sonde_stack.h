/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The one place sonde's programs take stacks. Today it asks the kernel
 * for frame-pointer walks (bpf_get_stackid); the unwinder will walk
 * .eh_frame here, and every stack-taking tool follows. Include after
 * <bpf/bpf_helpers.h>. A tool that defines SONDE_UNWIND before including
 * this gets the table walker for user stacks (take_stacks_unwind; see
 * sonde_unwind.h) and must also include <bpf/bpf_core_read.h> first. */
#ifndef SONDE_STACK_H
#define SONDE_STACK_H

/* A stack map (key: stack id, u32; value: up to MAX_STACK_DEPTH
 * instruction pointers, u64, leaf first, zero padded). User and kernel
 * stacks share it; Go reads it with bpfmaps.Stack. */
#define STACK_MAP(name, entries)                                   \
	struct {                                                       \
		__uint(type, BPF_MAP_TYPE_STACK_TRACE);                    \
		__uint(key_size, sizeof(__u32));                           \
		__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));       \
		__uint(max_entries, entries);                              \
	} name SEC(".maps")

#define STACK_NONE (-1)    /* not asked for */
#define STACK_NO_USER (-14) /* -EFAULT: no user context (kernel thread) */

/* Which walks failed, as bits of take_stacks' result. */
#define STACK_FAILED_USER 1
#define STACK_FAILED_KERNEL 2

/* Take the current task's user and/or kernel stack into stacks; ids (or
 * a negative errno, STACK_NONE when not asked) go to *ustack and *kstack.
 * Returns STACK_FAILED_* bits; a user walk without a user context is not
 * a failure. ctx is the program's context (the walks start from it). */
static __always_inline __u32 take_stacks(void *ctx, void *stacks, bool user, bool kernel, __s32 *ustack, __s32 *kstack)
{
	__u32 failed = 0;
	*ustack = STACK_NONE;
	*kstack = STACK_NONE;
	if (user) {
		*ustack = bpf_get_stackid(ctx, stacks, BPF_F_USER_STACK);
		if (*ustack < 0 && *ustack != STACK_NO_USER)
			failed |= STACK_FAILED_USER;
	}
	if (kernel) {
		*kstack = bpf_get_stackid(ctx, stacks, 0);
		if (*kstack < 0 && *kstack != STACK_NO_USER)
			failed |= STACK_FAILED_KERNEL;
	}
	return failed;
}

#ifdef SONDE_UNWIND
#include "sonde_unwind.h"

/* take_stacks with the user stack walked by the unwinder (sonde_unwind.h):
 * *ustack is the stack's key in unwind_stacks, 0 when there is none. A
 * truncated user walk is not a failure here: unwind_counters and each
 * stack's end say how complete it is. */
static __always_inline __u32 take_stacks_unwind(void *ctx, void *stacks, bool user, bool kernel, __u64 *ustack, __s32 *kstack)
{
	__u32 failed = 0;
	*ustack = 0;
	*kstack = STACK_NONE;
	if (user)
		*ustack = unwind_user_stack();
	if (kernel) {
		*kstack = bpf_get_stackid(ctx, stacks, 0);
		if (*kstack < 0 && *kstack != STACK_NO_USER)
			failed |= STACK_FAILED_KERNEL;
	}
	return failed;
}
#endif

/* A task and the stacks it was at, as the tools that count per stack key
 * them (why's on-CPU slices, stackcount's hits); Go's bpfskel.StackKey. */
struct sonde_stack_key {
	__u32 pid;
	__u32 tid;          /* 0 unless keyed per thread */
	__u64 user_stack;   /* key in unwind_stacks, 0: none */
	__s32 kernel_stack; /* id in the stack map, or a negative errno */
	__u32 unused;
};

/* The options of the tools that count time or hits per stack (profile,
 * offcpu, stackcount), set before load: one statement declaring them. */
#define STACK_OPTIONS                                                     \
	const volatile __u32 target_pid = 0;    /* 0: every process */        \
	const volatile bool per_thread = false; /* key by thread as well */  \
	const volatile bool user_stacks = true;                               \
	const volatile bool kernel_stacks = true

#endif
