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
	WALK_ERR_OUTPUT, /* the record could not be written (ring full, no output event on this CPU) */
	WALK_ERR_MAX,
};

KEEP_TYPE(enum walk_error, walk_error);

/* key: CPU index (u32); value: fd of that CPU's PERF_COUNT_SW_BPF_OUTPUT
 * event, whose output goes to record's ring on that CPU. Filled by user
 * space. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} walk_out SEC(".maps");

/* key: enum walk_error (u32); value: events (u64), per CPU. */
PERCPU_COUNTERS(walk_errors, WALK_ERR_MAX);

/* Every program returns 1: the kernel then writes record's own sample
 * (with its kernel callchain) right after the key. */
static __always_inline int walk(void *ctx)
{
	struct walk_record r = {.key = unwind_user_stack()};
	if (bpf_perf_event_output(ctx, &walk_out, BPF_F_CURRENT_CPU, &r, sizeof(r)))
		counter_inc(&walk_errors, WALK_ERR_OUTPUT);
	return 1;
}

/* Sampling events (cpu-clock, task-clock, hardware counters). */
SEC("perf_event")
int walk_sample(void *ctx) { return walk(ctx); }

/* Tracepoints: attached once per tracepoint, they run at every hit. */
SEC("tracepoint")
int walk_tracepoint(void *ctx) { return walk(ctx); }

/* User probes (u:BIN:fn): the registers are those at the probed
 * instruction, so a probe on a function's first instruction still names
 * its caller (the return address is on top of the stack). */
SEC("uprobe")
int walk_uprobe(void *ctx) { return walk(ctx); }
