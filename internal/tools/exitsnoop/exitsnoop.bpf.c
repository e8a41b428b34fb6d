//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* exitsnoop: every process exit with its age and exit status, from the
 * sched_process_exit tracepoint (tp_btf, else raw_tp; no kprobes). The
 * tracepoint runs in the exiting task, after it was counted out of its
 * thread group, so the group's live count says whether the process ends. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "sonde_target.h"
#include "sonde_cgroup.h"
#include "sonde_tp.h"
#include "exitsnoop.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool per_thread = false;  /* every thread's exit, not only the process's */
const volatile bool failed_only = false; /* only exits with a non-zero status */

/* Only the fields read here, relocated by CO-RE. */
typedef struct {
	int counter;
} atomic_t;

struct signal_struct {
	atomic_t live; /* threads not yet exited */
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	int exit_code;
	__u64 start_time; /* CLOCK_MONOTONIC ns at fork */
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	struct signal_struct *signal;
} __attribute__((preserve_access_index));

/* key: enum exitsnoop_counter; value: exits lost (u64), per CPU. */
ENUM_COUNTERS(lost, enum exitsnoop_counter, EXITSNOOP_COUNTERS);

KEEP_TYPE(struct exitsnoop_event, event);

/* Records to user space: one struct exitsnoop_event per exit. */
RINGBUF(events, 1 << 18);

TP_BTF_OR_RAW(sched_process_exit, exit)
{
	__u64 id;
	if (!current_traced(&id) || !cgroup_traced())
		return 0;
	struct task_struct *t = (struct task_struct *)ctx[0];
	bool last = BPF_CORE_READ(t, signal, live.counter) == 0;
	if (!per_thread && !last)
		return 0;
	int code = BPF_CORE_READ(t, exit_code);
	if (failed_only && code == 0)
		return 0;
	struct exitsnoop_event *e = ring_reserve(&events, sizeof(*e), &lost, EXITSNOOP_LOST_RING);
	if (!e)
		return 0;
	e->time_ns = bpf_ktime_get_ns();
	/* A process is as old as its first thread; a thread, as itself. */
	__u64 start = per_thread ? BPF_CORE_READ(t, start_time) : BPF_CORE_READ(t, group_leader, start_time);
	e->age_ns = e->time_ns - start;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ppid = BPF_CORE_READ(t, real_parent, tgid);
	e->exit_code = code;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	ring_submit(&events, e);
	return 0;
}
