//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* cpudist: how long tasks run on a CPU each time they are switched in
 * (or, with offcpu, how long they stay off it), from sched_switch (tp_btf,
 * else raw_tp). A run is measured on the scheduler's own clock of the
 * task (se.sum_exec_runtime, brought up to date for the task leaving
 * before the tracepoint), so time the vCPU was stolen by the host or spent
 * in interrupts is not counted as the task's, just as in its schedstat; a
 * wait off the CPU by the monotonic clock. The distribution is kept in
 * the kernel in log-linear slots, with the exact count and sum beside it. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_bits.h"
#include "sonde_maps.h"
#include "sonde_target.h"
#include "sonde_task.h"
#include "sonde_tp.h"
#include "cpudist.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

KEEP_TYPE(enum sonde_split, sonde_split);

const volatile __u32 split = SONDE_SPLIT_NONE;  /* enum sonde_split */
const volatile bool offcpu = false;              /* time off the CPU instead of on it */

/* key: tid (u32); value: when its current run (or wait) began (u64 ns: its
 * sum_exec_runtime then, or with offcpu the monotonic clock). On-CPU, a
 * run's end stays as the next run's start: the task's runtime does not
 * move between its runs, so a run whose switch-in was not seen is still
 * timed exactly. LRU: the threads that stopped running age out. */
SONDE_MAP(starts, BPF_MAP_TYPE_LRU_HASH, __u32, __u64, 32768);

/* key: struct sonde_slot (group: pid or tid; slot of the run's length in
 * ns); value: runs in that slot (u64 count). Split only. */
HASH_MAP(hist, struct sonde_slot, __u64, 65536);

/* key: group (u32: pid or tid); value: struct cpudist_total. Split only. */
HASH_MAP(totals, __u32, struct cpudist_total, 16384);

/* Not split, one distribution: arrays, whose lookups the verifier turns
 * into an address computation, and no atomics for the totals. */

/* key: slot of the run's length in ns (u32); value: runs (u64 count). */
SONDE_MAP(one_hist, BPF_MAP_TYPE_ARRAY, __u32, __u64, 512);

/* key: 0 (u32); value: struct cpudist_total, per CPU. */
PERCPU_ARRAY(one_total, struct cpudist_total, 1);

/* key: enum cpudist_counter; value: count (u64), per CPU. */
ENUM_COUNTERS(counts, enum cpudist_counter, CPUDIST_COUNTERS);

/* A run (or wait) of a traced thread begins at now. */
static __always_inline void begin(__u32 tgid, __u32 tid, __u64 now)
{
	if (!tid || !pid_traced(tgid))
		return;
	if (bpf_map_update_elem(&starts, &tid, &now, BPF_ANY))
		counter_inc(&counts, CPUDIST_LOST_MAP);
}

/* A run (or wait) of a traced thread ends at now: count it. */
static __always_inline void end(__u32 tgid, __u32 tid, __u64 now)
{
	if (!tid || !pid_traced(tgid))
		return;
	__u64 *ts = bpf_map_lookup_elem(&starts, &tid);
	if (!ts) {
		counter_inc(&counts, CPUDIST_UNKNOWN);
		if (!offcpu)
			bpf_map_update_elem(&starts, &tid, &now, BPF_ANY); /* the next run's start */
		return;
	}
	__u64 d = now - *ts;
	if (offcpu)
		bpf_map_delete_elem(&starts, &tid);
	else
		*ts = now;
	if (split == SONDE_SPLIT_NONE) {
		__u32 slot = log_linear_slot(d), zero = 0;
		__u64 *c = bpf_map_lookup_elem(&one_hist, &slot);
		struct cpudist_total *t = bpf_map_lookup_elem(&one_total, &zero);
		if (!c || !t) {
			counter_inc(&counts, CPUDIST_LOST_MAP);
			return;
		}
		__sync_fetch_and_add(c, 1);
		t->runs++;
		t->sum_ns += d;
		return;
	}
	__u32 group = split_group(split, tgid, tid);
	struct sonde_slot k = {.group = group, .slot = log_linear_slot(d)};
	struct cpudist_total zero = {}, *t = lookup_or_init(&totals, &group, &zero);
	if (!t || !map_add(&hist, &k, 1)) {
		counter_inc(&counts, CPUDIST_LOST_MAP);
		return;
	}
	__sync_fetch_and_add(&t->runs, 1);
	__sync_fetch_and_add(&t->sum_ns, d);
}

/* sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next, ...):
 * prev's run ends and its wait begins; next's wait ends and its run begins. */
TP_BTF_OR_RAW(sched_switch, switch)
{
	struct task_struct *prev = (void *)ctx[1], *next = (void *)ctx[2];
	__u32 ptgid = TASK_FIELD(btf, prev, tgid), ptid = TASK_FIELD(btf, prev, pid);
	__u32 ntgid = TASK_FIELD(btf, next, tgid), ntid = TASK_FIELD(btf, next, pid);
	if (offcpu) {
		__u64 now = bpf_ktime_get_ns();
		begin(ptgid, ptid, now);
		end(ntgid, ntid, now);
	} else {
		end(ptgid, ptid, TASK_FIELD(btf, prev, se.sum_exec_runtime));
		/* A thread seen before already has its start: its last run's
		 * end (its runtime does not move while it waits). A lookup is
		 * cheaper than an LRU map's update. */
		if (!bpf_map_lookup_elem(&starts, &ntid))
			begin(ntgid, ntid, TASK_FIELD(btf, next, se.sum_exec_runtime));
	}
	return 0;
}
