//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* syscount: system calls counted (and timed) in the kernel per syscall, or
 * per process and syscall, from the raw_syscalls tracepoints. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include "sonde_maps.h"
/* Gated (sonde_target.h): nothing is counted until every program is
 * attached and the command (with -- CMD) is released, so the held child's
 * own start-up (a Go runtime's futex and nanosleep calls while sonde
 * loads) is not counted. */
#define SONDE_GATED
#include "sonde_target.h"
#include "sonde_syscalls.h"
#include "syscount.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool per_process = false;
const volatile bool latency = false;

struct start {
	__u64 ts;
	__u32 nr;
};

/* key: struct syscount_key; value: struct syscount_val (counts, ns). */
HASH_MAP(counts, struct syscount_key, struct syscount_val, 16384);

/* Counts per syscall when not split by process. key: syscall number (u32,
 * below NR_SLOTS); value: struct syscount_val (counts, ns), one per CPU: an
 * array lookup is inlined and a per-CPU slot needs no atomics, so the hot
 * path is a few instructions (a hash lookup and a locked add cost several
 * times more per syscall). User space sums the CPUs (max: the largest). */
#define NR_SLOTS 1024
PERCPU_ARRAY(by_nr, struct syscount_val, NR_SLOTS);

/* key: the task (task storage); value: when its current syscall began.
 * Task storage hangs off the task itself: one pointer away, where a hash
 * keyed by tid costs a hashed update at entry and a lookup and a delete at
 * exit (with -L that was most of sonde's cost per syscall, bench -cost). */
TASK_STORAGE(starts, struct start);

/* key: 0; value: syscalls lost to a full map (u64), per CPU. */
PERCPU_COUNTERS(lost, 1);

/* The counts of syscall nr (of pid when per process) and whether they are
 * this CPU's own (no atomics needed). */
static __always_inline struct syscount_val *slot(__u32 pid, __u32 nr, bool *percpu)
{
	*percpu = false;
	if (!per_process && nr < NR_SLOTS) {
		*percpu = true;
		return bpf_map_lookup_elem(&by_nr, &nr);
	}
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

/* Add delta to a count of a slot: plainly in this CPU's own copy, else
 * atomically (a shared hash entry). */
static __always_inline void add(__u64 *count, __u64 delta, bool own)
{
	if (own)
		*count += delta;
	else
		__sync_fetch_and_add(count, delta);
}

/* Count a call of syscall nr by pid; its slot (NULL: the map is full). */
static __always_inline struct syscount_val *count_call(__u32 pid, __u32 nr, bool *own)
{
	struct syscount_val *v = slot(pid, nr, own);
	if (v)
		add(&v->count, 1, *own);
	return v;
}

/* A syscall's own entry tracepoint (syscalls/sys_enter_NAME): the number
 * follows the common fields. */
struct nr_args {
	__u64 common;
	int nr;
};

/* Without -L every syscall is counted at its exit (one program per
 * syscall, with its result for the error count) except exit and
 * exit_group, which never return: their own entry tracepoints (which fire
 * for them alone) count those. */
TRACED_PROG("tracepoint/syscalls/sys_enter_exit", noreturn_enter, struct nr_args)
{
	bool own;
	count_call(id >> 32, (__u32)ctx->nr, &own);
	return 0;
}

/* With -L: counted and timed from entry (exit and exit_group included). */
TRACED_PROG("tracepoint/raw_syscalls/sys_enter", sys_enter, struct sys_enter_args)
{
	__u32 nr = (__u32)ctx->id;
	bool own;
	count_call(id >> 32, nr, &own);
	if (latency) {
		struct start *s = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (s) {
			s->ts = bpf_ktime_get_ns();
			s->nr = nr;
		}
	}
	return 0;
}

TRACED_PROG("tracepoint/raw_syscalls/sys_exit", sys_exit, struct sys_exit_args)
{
	__u32 pid = id >> 32;
	if (!latency) {
		bool own;
		struct syscount_val *v = count_call(pid, (__u32)ctx->id, &own);
		if (v && ctx->ret < 0)
			add(&v->errors, 1, own);
		return 0;
	}
	struct start *s = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), 0, 0);
	if (!s || !s->ts)
		return 0;
	__u64 d = bpf_ktime_get_ns() - s->ts;
	bool own;
	struct syscount_val *v = slot(pid, s->nr, &own);
	if (v) {
		add(&v->total_ns, d, own);
		if (d > v->max_ns)
			v->max_ns = d;
		if (ctx->ret < 0)
			add(&v->errors, 1, own);
	}
	s->ts = 0;
	return 0;
}
