//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* stackcount: how often each stack reaches an event, counted in the
 * kernel. The same program runs on any tracepoint and any uprobe: it
 * takes the user stack with the shared unwinder (sonde_unwind.h, from the
 * task's saved registers, so the program type does not matter) and the
 * kernel stack from its context, and bumps the stack's count. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#define SONDE_UNWIND
#include "sonde_stack.h"
#include "stackcount.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

STACK_OPTIONS;

/* Kernel stacks (see sonde_stack.h); user stacks go to unwind_stacks. */
STACK_MAP(stacks, 16384);

/* key: struct stackcount_key; value: hits (u64 count). Allocated on
 * insert: memory follows the stacks met. */
SONDE_MAP_FLAGS(counts, BPF_MAP_TYPE_HASH, struct stackcount_key, __u64, 65536, BPF_F_NO_PREALLOC);

/* key: enum stackcount_error; value: count (u64), per CPU. */
ENUM_COUNTERS(errors, enum stackcount_error, STACKCOUNT_ERR_MAX);

static __always_inline int count(void *ctx, bool kernel)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32;
	if (target_pid && pid != target_pid)
		return 0;
	struct stackcount_key key = {.at = {.pid = pid, .tid = per_thread ? (__u32)id : 0}};
	bpf_get_current_comm(&key.comm, sizeof(key.comm));
	if (take_stacks_unwind(ctx, &stacks, user_stacks && pid != 0, kernel && kernel_stacks, &key.at.user_stack, &key.at.kernel_stack) & STACK_FAILED_KERNEL)
		counter_inc(&errors, STACKCOUNT_ERR_STACK);
	if (!map_add(&counts, &key, 1))
		counter_inc(&errors, STACKCOUNT_ERR_FULL);
	return 0;
}

SEC("tracepoint")
int on_tracepoint(void *ctx) { return count(ctx, true); }

/* A user function's kernel stack is only the breakpoint's trap: none is
 * taken. */
SEC("uprobe")
int on_uprobe(void *ctx) { return count(ctx, false); }
