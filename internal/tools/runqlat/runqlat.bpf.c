//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* runqlat: how long runnable tasks wait for a CPU. A task becomes runnable
 * at sched_wakeup/sched_wakeup_new, or when it is preempted (sched_switch
 * with prev still running); the wait ends when sched_switch picks it. The
 * distribution is kept in the kernel in log-linear slots. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_bits.h"
#include "sonde_maps.h"
#include "sonde_target.h"
#include "sonde_task.h"
#include "sonde_tp.h"
#include "runqlat.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Keep the shared types in BTF for bpf2go -type. */
KEEP_TYPE(enum sonde_split, sonde_split);

const volatile __u32 split = SONDE_SPLIT_NONE; /* enum sonde_split */

/* key: tid (u32); value: when it became runnable (u64 ns). */
HASH_MAP(starts, __u32, __u64, 32768);

/* key: struct sonde_slot (group: pid or tid; slot of the wait in ns);
 * value: waits in that slot (u64 count). Split only. */
HASH_MAP(hist, struct sonde_slot, __u64, 65536);

/* key: slot of the wait in ns (u32); value: waits in that slot (u64
 * count). Not split: an array, whose lookup the verifier turns into an
 * address computation. 64 octaves × 8 slots. */
SONDE_MAP(one_hist, BPF_MAP_TYPE_ARRAY, __u32, __u64, 512);

/* key: enum runqlat_counter; value: count (u64), per CPU. */
ENUM_COUNTERS(switches, enum runqlat_counter, RUNQLAT_NCOUNTERS);

static __always_inline void enqueue(struct task_struct *p, const bool btf)
{
	__u32 tgid = TASK_FIELD(btf, p, tgid), tid = TASK_FIELD(btf, p, pid);
	if (!tid || !pid_traced(tgid) || !task_cgroup_traced(p))
		return;
	__u64 now = bpf_ktime_get_ns();
	bpf_map_update_elem(&starts, &tid, &now, BPF_ANY);
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev, struct task_struct *next, const bool btf)
{
	/* Preempted (even with a sleeping state set, before it could sleep)
	 * or still TASK_RUNNING: it stays runnable, back in the queue. */
	if (preempt || task_state_btf(prev, btf) == 0)
		enqueue(prev, btf);
	__u32 tid = TASK_FIELD(btf, next, pid), tgid = TASK_FIELD(btf, next, tgid);
	if (!tid || !pid_traced(tgid) || !task_cgroup_traced(next))
		return 0;
	counter_inc(&switches, RUNQLAT_SWITCHES);
	__u64 *ts = bpf_map_lookup_elem(&starts, &tid);
	if (!ts) {
		counter_inc(&switches, RUNQLAT_UNKNOWN);
		return 0;
	}
	__u64 d = bpf_ktime_get_ns() - *ts;
	bpf_map_delete_elem(&starts, &tid);
	__u32 slot = log_linear_slot(d);
	if (split == SONDE_SPLIT_NONE) {
		__u64 *c = bpf_map_lookup_elem(&one_hist, &slot);
		if (c)
			__sync_fetch_and_add(c, 1);
		return 0;
	}
	struct sonde_slot k = {.group = split_group(split, tgid, tid), .slot = slot};
	map_add(&hist, &k, 1);
	return 0;
}

static __always_inline int on_wakeup(struct task_struct *p, const bool btf)
{
	enqueue(p, btf);
	return 0;
}

/* sched_wakeup(struct task_struct *p) */
TP_BTF_OR_RAW(sched_wakeup, wakeup)
{
	return on_wakeup((void *)ctx[0], btf);
}

/* sched_wakeup_new(struct task_struct *p) */
TP_BTF_OR_RAW(sched_wakeup_new, wakeup_new)
{
	return on_wakeup((void *)ctx[0], btf);
}

/* sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next, ...) */
TP_BTF_OR_RAW(sched_switch, switch)
{
	return on_switch((bool)ctx[0], (void *)ctx[1], (void *)ctx[2], btf);
}
