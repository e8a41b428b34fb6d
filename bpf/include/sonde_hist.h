/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Latency histograms kept in the kernel in internal/model/histogram's own
 * buckets (its flat layout: histogram.Slot, histogram.Slots), so counts a
 * program made read back with the same 1/256 bound as values user space
 * added, plus the exact count, sum, minimum and maximum beside them. */
#ifndef SONDE_HIST_H
#define SONDE_HIST_H

/* Values below 128 ns a bucket each, then 128 buckets per power of two,
 * 58 octaves (a test checks HIST_SLOTS against histogram.Slots). */
#define HIST_SUB_BITS 7
#define HIST_SLOTS (58 << HIST_SUB_BITS)

/* The exact figures beside one histogram (Go's bpfskel.HistSums), kept
 * per CPU so the hot path needs no atomics; user space merges the CPUs. */
struct sonde_hist_sums {
	__u64 count;
	__u64 sum_ns;
	__u64 min_inv; /* ~smallest value: zero (unset) is the largest */
	__u64 max_ns;
};

/* The flat slot of v (histogram.Slot): octave × 128 + sub-bucket. */
static __always_inline __u32 hist_slot(__u64 v)
{
	if (v < (1 << HIST_SUB_BITS))
		return v;
	__u32 msb = 0;
	__u64 x = v;
	if (x >> 32) { x >>= 32; msb += 32; }
	if (x >> 16) { x >>= 16; msb += 16; }
	if (x >> 8) { x >>= 8; msb += 8; }
	if (x >> 4) { x >>= 4; msb += 4; }
	if (x >> 2) { x >>= 2; msb += 2; }
	if (x >> 1) { msb += 1; }
	__u32 oct = msb - HIST_SUB_BITS + 1;
	__u32 sub = (__u32)(v >> (msb - HIST_SUB_BITS)) - (1 << HIST_SUB_BITS);
	return (oct << HIST_SUB_BITS) + sub;
}

/* Add value d to the figures *s (this CPU's). */
static __always_inline void hist_sums_add(struct sonde_hist_sums *s, __u64 d)
{
	s->count++;
	s->sum_ns += d;
	if (~d > s->min_inv)
		s->min_inv = ~d;
	if (d > s->max_ns)
		s->max_ns = d;
}

#endif
