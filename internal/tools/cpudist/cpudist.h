/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* cpudist's keys and values, shared by the BPF program and Go (bpfgen -type). */
#ifndef CPUDIST_H
#define CPUDIST_H

/* A histogram slot: log_linear_slot() of a run's length in ns (8 slots per
 * power of two, so percentiles are within 12.5%). */
struct cpudist_key {
	__u32 group; /* pid or tid; 0 when not split */
	__u32 slot;
};

/* The exact totals of a group, beside its slots. */
struct cpudist_total {
	__u64 runs;   /* runs (or waits with offcpu) ended */
	__u64 sum_ns; /* their total length, ns */
};

enum cpudist_counter {
	CPUDIST_UNKNOWN,   /* runs whose start was before tracing (not counted) */
	CPUDIST_LOST_MAP,  /* runs not counted: a map was full */
	CPUDIST_COUNTERS,
};

#endif
