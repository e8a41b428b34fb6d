/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* cpudist's keys and values, shared by the BPF program and Go (bpfgen -type). */
#ifndef CPUDIST_H
#define CPUDIST_H

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
