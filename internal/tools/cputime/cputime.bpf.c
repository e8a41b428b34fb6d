//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* cputime: exact on-CPU time per task from sched_switch (seed 002). At each
 * switch the outgoing task's slice is added to its per-CPU total; nothing
 * crosses to user space until it reads the maps once per interval. The
 * idle task (tid 0) gives idle time per CPU. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "sonde_task.h"
#include "cputime.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* key: tid (u32); value: struct cputime_val, per CPU (ns on that CPU). */
SONDE_MAP(times, BPF_MAP_TYPE_PERCPU_HASH, __u32, struct cputime_val, 32768);

/* key: tid (u32); value: the task's se.sum_exec_runtime (ns) at the first
 * snapshot, written by user space (seed). Read only at the first switch a
 * CPU shows the program, whose outgoing task came in before tracing began. */
HASH_MAP(base, __u32, __u64, 32768);

/* key: 0; value: struct cputime_curr, per CPU (who runs, since when in ns). */
PERCPU_ARRAY(curr, struct cputime_curr, 1);

/* key: enum cputime_counter; value: count (u64), per CPU. */
ENUM_COUNTERS(lost, enum cputime_counter, CPUTIME_NCOUNTERS);

/* The scheduler's runtime at a task's last pick (fair class): its sum when
 * the current slice began, whether or not the program saw that switch. */
struct sched_entity___slice {
	__u64 prev_sum_exec_runtime;
} __attribute__((preserve_access_index));
struct task_struct___slice {
	unsigned int policy;
	struct sched_entity___slice se;
} __attribute__((preserve_access_index));

/* add charges d ns to tid on this CPU (a per-CPU value: no other CPU
 * writes it). A new entry carries prev's name (none when prev is 0: user
 * space names the task). */
static __always_inline void add(struct task_struct *prev, __u32 tid, __u32 pid, __u64 d)
{
	struct cputime_val *v = bpf_map_lookup_elem(&times, &tid);
	if (v) {
		v->ns += d;
		return;
	}
	struct cputime_val nv = {.ns = d, .pid = pid};
	if (prev)
		BPF_CORE_READ_STR_INTO(&nv.comm, prev, comm);
	if (bpf_map_update_elem(&times, &tid, &nv, BPF_NOEXIST))
		counter_inc(&lost, CPUTIME_LOST_FULL);
}

/* The fair class keeps a task's runtime at its last pick; other policies
 * do not (0: unknown). */
static __always_inline __u64 fair_slice_from(unsigned int policy, __u64 prev_sum)
{
	return policy == 0 || policy == 3 || policy == 5 ? prev_sum : 0; /* NORMAL, BATCH, IDLE */
}

/* The switch path, once with direct BTF reads (tp_btf: plain loads, no
 * helper calls) and once with probe reads (raw_tp). The common case costs
 * one hash lookup: the outgoing task came in at a switch the program saw,
 * so its slice is its runtime now less its runtime then (the kernel's own
 * counter, kept in curr). Two rare cases need more:
 *  - the first switch a CPU shows: the slice began before tracing, so it
 *    counts from the task's seeded runtime at the first snapshot (base);
 *  - a switch the kernel did not report (seen on recent kernels): the
 *    outgoing task came in unseen, after the task curr names. Its slice is
 *    its runtime since its last pick (fair tasks; bounded by the clock
 *    otherwise), and the rest of the time since curr's switch-in goes to
 *    the task curr names, which left the CPU unseen. */
#define DEFINE_ON_SWITCH(NAME, READ, READ_SUM, READ_SLICE)                          \
static __always_inline int NAME(struct task_struct *prev, struct task_struct *next) \
{                                                                                    \
	__u32 zero = 0;                                                               \
	__u64 now = bpf_ktime_get_ns();                                               \
	struct cputime_curr *c = bpf_map_lookup_elem(&curr, &zero);                   \
	if (!c)                                                                       \
		return 0;                                                             \
	__u32 ptid = READ(prev, pid);                                                 \
	__u64 psum = ptid ? READ_SUM(prev) : 0;                                       \
	__u64 d = 0;                                                                  \
	if (c->since && c->tid == ptid) {                                             \
		d = ptid ? psum - c->base : now - c->since;                           \
	} else if (!c->since) {                                                       \
		__u64 *b = ptid ? bpf_map_lookup_elem(&base, &ptid) : 0;              \
		if (b && psum > *b)                                                   \
			d = psum - *b;                                                \
	} else {                                                                      \
		__u64 span = now - c->since;                                          \
		d = span;                                                             \
		if (ptid) {                                                           \
			__u64 from = READ_SLICE(prev);                                \
			if (from && from <= psum && psum - from < span)               \
				d = psum - from;                                      \
		}                                                                     \
		if (span > d)                                                         \
			add(0, c->tid, c->pid, span - d); /* left unseen */   \
		counter_inc(&lost, CPUTIME_UNSEEN);                                   \
	}                                                                             \
	if (d)                                                                        \
		add(prev, ptid, READ(prev, tgid), d);                                 \
	c->since = now;                                                               \
	c->tid = READ(next, pid);                                                     \
	c->pid = READ(next, tgid);                                                    \
	c->base = READ_SUM(next);                                                     \
	return 0;                                                                     \
}

#define DIRECT_READ(p, f) ((p)->f)
#define DIRECT_SUM(p) ((p)->se.sum_exec_runtime)
#define CORE_SUM(p) BPF_CORE_READ(p, se.sum_exec_runtime)
#define SLICE(p) ((struct task_struct___slice *)(p))
#define DIRECT_SLICE(p) fair_slice_from(SLICE(p)->policy, SLICE(p)->se.prev_sum_exec_runtime)
#define CORE_SLICE(p) fair_slice_from(BPF_CORE_READ(SLICE(p), policy), \
				      BPF_CORE_READ(SLICE(p), se.prev_sum_exec_runtime))
DEFINE_ON_SWITCH(on_switch_btf, DIRECT_READ, DIRECT_SUM, DIRECT_SLICE)
DEFINE_ON_SWITCH(on_switch_raw, BPF_CORE_READ, CORE_SUM, CORE_SLICE)

SEC("tp_btf/sched_switch")
int tp_btf_switch(__u64 *ctx)
{
	return on_switch_btf((void *)ctx[1], (void *)ctx[2]);
}

SEC("raw_tp/sched_switch")
int raw_switch(__u64 *ctx)
{
	return on_switch_raw((void *)ctx[1], (void *)ctx[2]);
}
