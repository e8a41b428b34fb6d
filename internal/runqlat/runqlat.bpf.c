//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* runqlat: how long runnable tasks wait for a CPU. A task becomes runnable
 * at sched_wakeup/sched_wakeup_new, or when it is preempted (sched_switch
 * with prev still running); the wait ends when sched_switch picks it. The
 * distribution is kept in the kernel in log-linear slots. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "runqlat.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const struct runqlat_key *unused_runqlat_key __attribute__((unused));

struct task_struct {
	int pid;
	int tgid;
	unsigned int __state;
} __attribute__((preserve_access_index));

struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

const volatile __u32 target_pid = 0;
const volatile __u32 split = 0; /* 0 none, 1 per process, 2 per thread */

/* key: tid (u32); value: when it became runnable (u64 ns). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 32768);
} starts SEC(".maps");

/* key: struct runqlat_key; value: waits in that slot (u64 count). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct runqlat_key);
	__type(value, __u64);
	__uint(max_entries, 65536);
} hist SEC(".maps");

/* key: 0 switch-ins of a task, 1 of those without a known start (runnable
 * before tracing began); value: count (u64), per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 2);
} switches SEC(".maps");

static __always_inline void bump(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&switches, &which);
	if (v)
		(*v)++;
}

static __always_inline __u32 slot_of(__u64 v)
{
	__u64 orig = v;
	if (v < 8)
		return (__u32)v;
	/* Most significant bit by binary search (no clz in the BPF ISA). */
	__u32 msb = 0;
	if (v >> 32) { msb += 32; v >>= 32; }
	if (v >> 16) { msb += 16; v >>= 16; }
	if (v >> 8) { msb += 8; v >>= 8; }
	if (v >> 4) { msb += 4; v >>= 4; }
	if (v >> 2) { msb += 2; v >>= 2; }
	if (v >> 1) { msb += 1; }
	return (msb << 3) | (__u32)((orig >> (msb - 3)) & 7);
}

static __always_inline void enqueue(__u32 tgid, __u32 tid)
{
	if (!tid || (target_pid && tgid != target_pid))
		return;
	__u64 now = bpf_ktime_get_ns();
	bpf_map_update_elem(&starts, &tid, &now, BPF_ANY);
}

static __always_inline long task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___old *)t, state);
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev, struct task_struct *next)
{
	/* Preempted (even with a sleeping state set, before it could sleep)
	 * or still TASK_RUNNING: it stays runnable, back in the queue. */
	if (preempt || task_state(prev) == 0)
		enqueue(BPF_CORE_READ(prev, tgid), BPF_CORE_READ(prev, pid));
	__u32 tid = BPF_CORE_READ(next, pid), tgid = BPF_CORE_READ(next, tgid);
	if (!tid || (target_pid && tgid != target_pid))
		return 0;
	bump(0);
	__u64 *ts = bpf_map_lookup_elem(&starts, &tid);
	if (!ts) {
		bump(1);
		return 0;
	}
	__u64 d = bpf_ktime_get_ns() - *ts;
	bpf_map_delete_elem(&starts, &tid);
	struct runqlat_key k = {.slot = slot_of(d)};
	if (split == 1)
		k.group = tgid;
	else if (split == 2)
		k.group = tid;
	__u64 *c = bpf_map_lookup_elem(&hist, &k);
	if (c) {
		__sync_fetch_and_add(c, 1);
	} else {
		__u64 one = 1;
		if (bpf_map_update_elem(&hist, &k, &one, BPF_NOEXIST) != 0) {
			c = bpf_map_lookup_elem(&hist, &k);
			if (c)
				__sync_fetch_and_add(c, 1);
		}
	}
	return 0;
}

SEC("tp_btf/sched_wakeup")
int tp_btf_wakeup(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	enqueue(BPF_CORE_READ(p, tgid), BPF_CORE_READ(p, pid));
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int tp_btf_wakeup_new(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	enqueue(BPF_CORE_READ(p, tgid), BPF_CORE_READ(p, pid));
	return 0;
}

SEC("tp_btf/sched_switch")
int tp_btf_switch(__u64 *ctx)
{
	return on_switch((bool)ctx[0], (void *)ctx[1], (void *)ctx[2]);
}

SEC("raw_tp/sched_wakeup")
int raw_wakeup(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	enqueue(BPF_CORE_READ(p, tgid), BPF_CORE_READ(p, pid));
	return 0;
}

SEC("raw_tp/sched_wakeup_new")
int raw_wakeup_new(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	enqueue(BPF_CORE_READ(p, tgid), BPF_CORE_READ(p, pid));
	return 0;
}

SEC("raw_tp/sched_switch")
int raw_switch(__u64 *ctx)
{
	return on_switch((bool)ctx[0], (void *)ctx[1], (void *)ctx[2]);
}
