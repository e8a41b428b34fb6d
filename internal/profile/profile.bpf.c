//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* profile: count on-CPU stacks in the kernel. A perf_event program runs at
 * every cpu-clock sample, looks up the user and kernel stack ids and bumps a
 * counter; user space reads the totals once, so no per-sample traffic
 * crosses to user space. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include "profile.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Options set before load. */
const volatile __u32 target_pid = 0;     /* 0: every process */
const volatile bool per_thread = false;  /* key by thread as well as process */
const volatile bool user_stacks = true;
const volatile bool kernel_stacks = true;
const volatile bool include_idle = false;

/* key: stack id (u32); value: up to MAX_STACK_DEPTH instruction pointers
 * (u64), leaf first, zero-terminated. Shared by user and kernel stacks. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} stacks SEC(".maps");

/* key: struct profile_key; value: samples (u64 count). A plain hash: the
 * per-key counter is bumped atomically, and per-CPU values would double the
 * memory for no gain at these rates. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct profile_key);
	__type(value, __u64);
	__uint(max_entries, 65536);
} counts SEC(".maps");

/* key: enum profile_error (u32); value: occurrences (u64), per CPU so the
 * hot path never contends. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, ERR_MAX);
} errors SEC(".maps");

static __always_inline void count_error(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&errors, &which);
	if (v)
		(*v)++;
}

SEC("perf_event")
int do_sample(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id;
	struct profile_key key = {};
	__u64 one = 1, *v;

	if (tid == 0 && !include_idle)
		return 0;
	if (target_pid && pid != target_pid)
		return 0;
	key.pid = pid;
	key.tid = per_thread ? tid : 0;
	bpf_get_current_comm(&key.comm, sizeof(key.comm));
	key.user_stack = -1;
	key.kernel_stack = -1;
	if (user_stacks) {
		key.user_stack = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
		/* -EFAULT: no user context (a kernel thread); not an error. */
		if (key.user_stack < 0 && key.user_stack != -14)
			count_error(ERR_USER_STACK);
	}
	if (kernel_stacks) {
		key.kernel_stack = bpf_get_stackid(ctx, &stacks, 0);
		if (key.kernel_stack < 0 && key.kernel_stack != -14)
			count_error(ERR_KERNEL_STACK);
	}
	v = bpf_map_lookup_elem(&counts, &key);
	if (v) {
		__sync_fetch_and_add(v, 1);
		return 0;
	}
	if (bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST) != 0) {
		v = bpf_map_lookup_elem(&counts, &key);
		if (v)
			__sync_fetch_and_add(v, 1);
		else
			count_error(ERR_COUNTS_FULL);
	}
	return 0;
}
