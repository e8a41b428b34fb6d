//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* record's user-stack walker. record samples with perf_event_open as perf
 * does; with --call-graph auto these programs run at each of its samples
 * (attached to record's own events with PERF_EVENT_IOC_SET_BPF), walk the
 * user stack with the shared unwinder (sonde_unwind.h) and write the
 * stack's key into the same per-CPU ring as the sample, just before it:
 * one sample stream, no stack copies, the frames themselves stay in
 * unwind_stacks and cross to user space once per distinct stack. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_task.h"
#include "sonde_maps.h"
#define SONDE_UNWIND
#include "sonde_stack.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Not in sonde.h: only record writes to perf rings from BPF. */
#define BPF_MAP_TYPE_PERF_EVENT_ARRAY 4
#define BPF_F_CURRENT_CPU 0xffffffffULL

/* What each program writes to walk_out: the user stack's key in
 * unwind_stacks (0: no user stack, or the stacks map was full). */
struct walk_record {
	__u64 key;
};

enum walk_error {
	WALK_ERR_OUTPUT,       /* the record could not be written: every cause below */
	WALK_ERR_RING_FULL,    /* -ENOSPC: record's ring on this CPU was full */
	WALK_ERR_NO_OUTPUT,    /* -ENOENT, -EOPNOTSUPP: no output event on this CPU (yet) */
	WALK_ERR_OUTPUT_OTHER, /* any other errno (-EBUSY: nested too deep, -E2BIG, -EINVAL) */
	WALK_ERR_MAX,
};

/* key: CPU index (u32); value: fd of that CPU's PERF_COUNT_SW_BPF_OUTPUT
 * event, whose output goes to record's ring on that CPU. Filled by user
 * space. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} walk_out SEC(".maps");

/* key: enum walk_error; value: events (u64), per CPU. */
ENUM_COUNTERS(walk_errors, enum walk_error, WALK_ERR_MAX);

/* Set when record's events follow some processes only (a command, -p):
 * a tracepoint's or user probe's program runs at every hit of every
 * process (the kernel keeps one program list per tracepoint, and checks
 * whether a perf event wants the hit only after it), so it walks only the
 * processes in walk_tgids. */
const volatile bool walk_filter = false;

/* key: tgid (u32); value: 1 (u8). The processes record follows: filled by
 * user space with its targets, and here with the children they fork. */
HASH_MAP(walk_tgids, __u32, __u8, 8192);

/* Every program returns 1: the kernel then writes record's own sample
 * (with its kernel callchain) right after the key; a tracepoint program
 * that returned 0 would drop the sample. */
static __always_inline int walk(void *ctx)
{
	if (walk_filter) {
		__u32 tgid = bpf_get_current_pid_tgid() >> 32;
		if (!bpf_map_lookup_elem(&walk_tgids, &tgid))
			return 1; /* not record's: no perf event wants this hit */
	}
	struct walk_record r = {.key = unwind_user_stack()};
	long err = bpf_perf_event_output(ctx, &walk_out, BPF_F_CURRENT_CPU, &r, sizeof(r));
	if (err) {
		counter_inc(&walk_errors, WALK_ERR_OUTPUT);
		if (err == -28 /* ENOSPC */)
			counter_inc(&walk_errors, WALK_ERR_RING_FULL);
		else if (err == -2 /* ENOENT */ || err == -95 /* EOPNOTSUPP */)
			counter_inc(&walk_errors, WALK_ERR_NO_OUTPUT);
		else
			counter_inc(&walk_errors, WALK_ERR_OUTPUT_OTHER);
	}
	return 1;
}

/* Sampling events (cpu-clock, task-clock, hardware counters). */
SEC("perf_event")
int walk_sample(void *ctx) { return walk(ctx); }

/* Tracepoints: attached once per tracepoint (a perf event's
 * PERF_EVENT_IOC_SET_BPF adds the program to the tracepoint's list), they
 * run at every hit, before the kernel looks for a perf event that wants
 * it. */
SEC("tracepoint")
int walk_tracepoint(void *ctx) { return walk(ctx); }

/* User probes (u:BIN:fn): the registers are those at the probed
 * instruction, so a probe on a function's first instruction still names
 * its caller (the return address is on top of the stack). */
SEC("uprobe")
int walk_uprobe(void *ctx) { return walk(ctx); }

/* A followed process's children are followed (record -- CMD follows
 * CMD's tree, as its inherited events do). Threads share the tgid. */
TP_BTF_OR_RAW(sched_process_fork, walk_fork)
{
	struct task_struct *parent = (void *)ctx[0], *child = (void *)ctx[1];
	__u32 ptgid = TASK_FIELD(btf, parent, tgid);
	if (!walk_filter || !bpf_map_lookup_elem(&walk_tgids, &ptgid))
		return 0;
	__u32 ctgid = TASK_FIELD(btf, child, tgid);
	__u8 one = 1;
	bpf_map_update_elem(&walk_tgids, &ctgid, &one, BPF_ANY);
	return 0;
}

/* …and forgotten when they exit, so the map holds live processes only. */
TP_BTF_OR_RAW(sched_process_exit, walk_exit)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	if (walk_filter && tgid == (__u32)id)
		bpf_map_delete_elem(&walk_tgids, &tgid);
	return 0;
}
