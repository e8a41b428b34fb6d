//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* syscount: system calls counted (and timed) in the kernel per syscall, or
 * per process and syscall, from the raw_syscalls tracepoints. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include "sonde_maps.h"
#include "syscount.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 target_pid = 0; /* 0: every process */
const volatile bool per_process = false;
const volatile bool latency = false;

/* The raw_syscalls tracepoint records (stable layout: 8 bytes of common
 * fields, then the syscall number). */
struct enter_args {
	__u64 common;
	long id;
	unsigned long args[6];
};

struct exit_args {
	__u64 common;
	long id;
	long ret;
};

struct start {
	__u64 ts;
	__u32 nr;
};

/* key: struct syscount_key; value: struct syscount_val (counts, ns). */
HASH_MAP(counts, struct syscount_key, struct syscount_val, 16384);

/* key: tid (u32); value: when its current syscall began. */
HASH_MAP(starts, __u32, struct start, 32768);

/* key: 0; value: syscalls lost to a full map (u64), per CPU. */
PERCPU_COUNTERS(lost, 1);

static __always_inline struct syscount_val *slot(__u32 pid, __u32 nr)
{
	struct syscount_key k = {.pid = per_process ? pid : 0, .nr = nr};
	struct syscount_val *v = bpf_map_lookup_elem(&counts, &k);
	if (v)
		return v;
	/* The name is copied once, when the entry is made. */
	struct syscount_val zero = {};
	if (per_process)
		bpf_get_current_comm(&zero.comm, sizeof(zero.comm));
	v = lookup_or_init(&counts, &k, &zero);
	if (!v)
		counter_inc(&lost, 0);
	return v;
}

/* The current process and thread; false when the pid filter rejects them. */
static __always_inline bool current_ids(__u32 *pid, __u32 *tid)
{
	__u64 id = bpf_get_current_pid_tgid();
	*pid = id >> 32;
	*tid = (__u32)id;
	return !target_pid || *pid == target_pid;
}

SEC("tracepoint/raw_syscalls/sys_enter")
int sys_enter(struct enter_args *ctx)
{
	__u32 pid, tid;
	if (!current_ids(&pid, &tid))
		return 0;
	__u32 nr = (__u32)ctx->id;
	/* Counted at entry: exit and exit_group never return. */
	struct syscount_val *v = slot(pid, nr);
	if (v)
		__sync_fetch_and_add(&v->count, 1);
	if (latency) {
		struct start s = {.ts = bpf_ktime_get_ns(), .nr = nr};
		bpf_map_update_elem(&starts, &tid, &s, BPF_ANY);
	}
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_exit")
int sys_exit(struct exit_args *ctx)
{
	__u32 pid, tid;
	if (!current_ids(&pid, &tid))
		return 0;
	if (!latency) {
		if (ctx->ret < 0) {
			struct syscount_val *v = slot(pid, (__u32)ctx->id);
			if (v)
				__sync_fetch_and_add(&v->errors, 1);
		}
		return 0;
	}
	struct start *s = bpf_map_lookup_elem(&starts, &tid);
	if (!s)
		return 0;
	__u64 d = bpf_ktime_get_ns() - s->ts;
	struct syscount_val *v = slot(pid, s->nr);
	if (v) {
		__sync_fetch_and_add(&v->total_ns, d);
		if (d > v->max_ns)
			v->max_ns = d;
		if (ctx->ret < 0)
			__sync_fetch_and_add(&v->errors, 1);
	}
	bpf_map_delete_elem(&starts, &tid);
	return 0;
}
