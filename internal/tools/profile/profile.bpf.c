//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* profile: count on-CPU stacks in the kernel. A perf_event program runs at
 * every cpu-clock sample, looks up the user and kernel stack ids and bumps a
 * counter; user space reads the totals once, so no per-sample traffic
 * crosses to user space. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#define SONDE_UNWIND
#include "sonde_stack.h"
#include "profile.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Options set before load. */
const volatile __u32 target_pid = 0;     /* 0: every process */
const volatile bool per_thread = false;  /* key by thread as well as process */
const volatile bool user_stacks = true;
const volatile bool kernel_stacks = true;
const volatile bool include_idle = false;

/* Kernel stacks (see sonde_stack.h); user stacks go to unwind_stacks. */
STACK_MAP(stacks, 16384);

/* key: struct profile_key; value: samples (u64 count). A plain hash: the
 * per-key counter is bumped atomically, and per-CPU values would double the
 * memory for no gain at these rates. */
HASH_MAP(counts, struct profile_key, __u64, 65536);

/* key: enum profile_error; value: occurrences (u64), per CPU. */
ENUM_COUNTERS(errors, enum profile_error, ERR_MAX);

SEC("perf_event")
int do_sample(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id;
	struct profile_key key = {};

	if (tid == 0 && !include_idle)
		return 0;
	if (target_pid && pid != target_pid)
		return 0;
	key.pid = pid;
	key.tid = per_thread ? tid : 0;
	bpf_get_current_comm(&key.comm, sizeof(key.comm));
	__u32 failed = take_stacks_unwind(ctx, &stacks, user_stacks, kernel_stacks, &key.user_stack, &key.kernel_stack);
	if (failed & STACK_FAILED_KERNEL)
		counter_inc(&errors, ERR_KERNEL_STACK);
	if (!map_add(&counts, &key, 1))
		counter_inc(&errors, ERR_COUNTS_FULL);
	return 0;
}
