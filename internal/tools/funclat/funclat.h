/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Shared between funclat.bpf.c and Go (bpf2go -type). */
#ifndef SONDE_FUNCLAT_H
#define SONDE_FUNCLAT_H

/* At most this many functions per run (the attach cookie indexes them). */
#define MAX_FUNCS 64

/* The latency histogram's flat layout: values below 128 ns a bucket each,
 * then 128 buckets per power of two, 58 octaves (internal/model/histogram.Slots;
 * a test checks they agree). */
#define HIST_SUB_BITS 7
#define HIST_SLOTS (58 << HIST_SUB_BITS)

/* Exact figures per function beside its histogram, per CPU. */
struct funclat_sums {
	__u64 count;
	__u64 sum_ns;
	__u64 min_inv; /* ~smallest latency: zero (unset) is the largest */
	__u64 max_ns;
};

#endif
