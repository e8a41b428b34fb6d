//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* cputime: exact on-CPU time per task from sched_switch (seed 002). At each
 * switch the outgoing task's slice is added to its per-CPU total; nothing
 * crosses to user space until it reads the maps once per interval. A
 * CPU's idle time is what its tasks did not use. */
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
HASH_MAP(seed, __u32, __u64, 32768);

/* key: tid (u32); value: the task's se.sum_exec_runtime (ns) up to which
 * its time is accounted, for a task that left a CPU without the program
 * being told (its next switch-out charges the rest). Looked up only while
 * repairs_pending is set. */
HASH_MAP(repair, __u32, __u64, 4096);

/* Set when a repair entry is added; user space clears it once the repair
 * map is empty (clear, then look: an entry added meanwhile sets it again). */
volatile __u32 repairs_pending;

/* key: 0; value: struct cputime_curr, per CPU (who runs, from what runtime). */
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

/* The fair class keeps a task's runtime at its last pick; other policies
 * do not (0: unknown). */
static __always_inline __u64 fair_slice_from(unsigned int policy, __u64 prev_sum)
{
	return policy == 0 || policy == 3 || policy == 5 ? prev_sum : 0; /* NORMAL, BATCH, IDLE */
}

/* add charges d ns to tid on this CPU (a per-CPU value: no other CPU
 * writes it). A new entry carries prev's names. */
static __always_inline void add(struct task_struct *prev, __u32 tid, __u32 pid, __u64 d)
{
	struct cputime_val *v = bpf_map_lookup_elem(&times, &tid);
	if (v) {
		v->ns += d;
		return;
	}
	struct cputime_val nv = {.ns = d, .pid = pid};
	BPF_CORE_READ_STR_INTO(&nv.comm, prev, comm);
	if (bpf_map_update_elem(&times, &tid, &nv, BPF_NOEXIST))
		counter_inc(&lost, CPUTIME_LOST_FULL);
}

/* taken returns the runtime up to which tid's time is accounted from map m
 * (and forgets it there), 0 when m has none. */
static __always_inline __u64 taken(void *m, __u32 tid)
{
	__u64 *b = bpf_map_lookup_elem(m, &tid);
	if (!b)
		return 0;
	__u64 v = *b;
	bpf_map_delete_elem(m, &tid);
	return v;
}

/* The switch path, once with direct BTF reads (tp_btf: plain loads, no
 * helper calls) and once with probe reads (raw_tp). Slices are differences
 * of the kernel's own runtime counter (so sonde agrees with schedstat),
 * and the common case reads no clock (a clock read costs about 60 ns in a
 * VM, a third of the program) and does one hash lookup: the outgoing task
 * came in at a switch the program saw, so its slice is its runtime now
 * less its runtime then, kept in curr. The idle task is not charged: a
 * CPU's idle time is the interval less its tasks' time. Rare cases:
 *  - the first switch a CPU shows: the slice began before tracing, so it
 *    counts from the task's seeded runtime at the first snapshot;
 *  - a switch the kernel did not report (seen on recent kernels): the task
 *    curr names left unseen, so its runtime up to its switch-in is noted
 *    for its next switch-out to charge the rest (repair); the outgoing
 *    task came in unseen: it is charged from a repair note, else from the
 *    scheduler's runtime at its last pick (fair class), else not at all. */
#define DEFINE_ON_SWITCH(NAME, READ, READ_SUM, READ_SLICE)                          \
static __always_inline int NAME(struct task_struct *prev, struct task_struct *next) \
{                                                                                    \
	__u32 zero = 0;                                                               \
	struct cputime_curr *c = bpf_map_lookup_elem(&curr, &zero);                   \
	if (!c)                                                                       \
		return 0;                                                             \
	__u32 ptid = READ(prev, pid);                                                 \
	__u64 psum = READ_SUM(prev);                                                  \
	__u64 from = 0;                                                               \
	if (!ptid) {                                                                  \
		/* the idle task: not charged */                                      \
	} else if (c->seen && c->tid == ptid) {                                      \
		from = c->base;                                                       \
		if (repairs_pending) {                                                \
			__u64 r = taken(&repair, ptid);                               \
			if (r && r < from)                                            \
				from = r;                                             \
		}                                                                     \
	} else if (!c->seen) {                                                        \
		from = taken(&seed, ptid);                                            \
	} else {                                                                      \
		from = repairs_pending ? taken(&repair, ptid) : 0;                    \
		if (!from)                                                            \
			from = READ_SLICE(prev);                                      \
	}                                                                             \
	if (c->seen && c->tid && c->tid != ptid) {                                    \
		__u32 left = c->tid;                                                  \
		bpf_map_update_elem(&repair, &left, &c->base, BPF_NOEXIST);           \
		repairs_pending = 1;                                                  \
		counter_inc(&lost, CPUTIME_UNSEEN);                                   \
	} else if (c->seen && !c->tid && ptid) {                                      \
		counter_inc(&lost, CPUTIME_UNSEEN);                                   \
	}                                                                             \
	if (from && from < psum)                                                      \
		add(prev, ptid, READ(prev, tgid), psum - from);                       \
	c->seen = 1;                                                                  \
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
