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

/* key: tid (u32); value: the task's se.sum_exec_runtime (ns) when its
 * runtime was last accounted. Slices are differences of the kernel's own
 * cumulative counter, so a switch the program is not told about loses no
 * time: the next accounted switch-out covers it. */
HASH_MAP(base, __u32, __u64, 32768);

/* key: 0; value: struct cputime_curr, per CPU (who runs, since when in ns). */
PERCPU_ARRAY(curr, struct cputime_curr, 1);

/* key: enum cputime_counter; value: count (u64), per CPU. */
ENUM_COUNTERS(lost, enum cputime_counter, CPUTIME_NCOUNTERS);

/* The switch path, once with direct BTF reads (tp_btf: plain loads, no
 * helper calls) and once with probe reads (raw_tp). Only the task ids are
 * read per switch; names are copied when a task first gets an entry. */
#define DEFINE_ON_SWITCH(NAME, READ, READ_SUM)                                      \
static __always_inline int NAME(struct task_struct *prev, struct task_struct *next) \
{                                                                                    \
	__u32 zero = 0;                                                               \
	__u64 now = bpf_ktime_get_ns();                                               \
	struct cputime_curr *c = bpf_map_lookup_elem(&curr, &zero);                   \
	if (!c)                                                                       \
		return 0;                                                             \
	__u32 ptid = READ(prev, pid);                                                 \
	__u64 d = 0;                                                                  \
	__u64 psum = ptid ? READ_SUM(prev) : 0;                                       \
	__u64 *b = ptid ? bpf_map_lookup_elem(&base, &ptid) : 0;                      \
	if (b) {                                                                      \
		d = psum - *b; /* the kernel's runtime since last accounted */         \
		*b = psum;                                                            \
	} else if (c->since && c->tid == ptid) {                                      \
		/* First slice of a task: from its switch-in by the kernel's     \
		 * counter; the idle task has none, so it is clocked. */             \
		d = ptid ? psum - c->base : now - c->since;                           \
		if (ptid)                                                             \
			bpf_map_update_elem(&base, &ptid, &psum, BPF_ANY);            \
	} else if (c->since) {                                                        \
		/* A switch was not reported to us (seen on recent kernels): prev \
		 * ran at the end of the slice; clock it and count the gap. */       \
		d = now - c->since;                                                   \
		if (ptid)                                                             \
			bpf_map_update_elem(&base, &ptid, &psum, BPF_ANY);            \
		counter_inc(&lost, CPUTIME_UNSEEN);                                   \
	}                                                                             \
	if (d) {                                                                      \
		struct cputime_val *v = bpf_map_lookup_elem(&times, &ptid);           \
		if (v) {                                                              \
			v->ns += d; /* per-CPU value: no other CPU writes it */       \
		} else {                                                              \
			struct cputime_val nv = {.ns = d, .pid = READ(prev, tgid)};   \
			BPF_CORE_READ_STR_INTO(&nv.comm, prev, comm);                 \
			if (bpf_map_update_elem(&times, &ptid, &nv, BPF_NOEXIST))     \
				counter_inc(&lost, CPUTIME_LOST_FULL);                \
		}                                                                     \
	}                                                                             \
	c->since = now;                                                               \
	c->tid = READ(next, pid);                                                     \
	c->pid = READ(next, tgid);                                                    \
	c->base = READ_SUM(next);                                                     \
	return 0;                                                                     \
}

#define DIRECT_READ(p, f) ((p)->f)
#define DIRECT_SUM(p) ((p)->se.sum_exec_runtime)
#define CORE_SUM(p) BPF_CORE_READ(p, se.sum_exec_runtime)
DEFINE_ON_SWITCH(on_switch_btf, DIRECT_READ, DIRECT_SUM)
DEFINE_ON_SWITCH(on_switch_raw, BPF_CORE_READ, CORE_SUM)

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
