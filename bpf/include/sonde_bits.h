/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Histogram slots computed in the kernel. */
#ifndef SONDE_BITS_H
#define SONDE_BITS_H

/* floor(log2(v)) for v > 0 (0 for 0), by binary search: the BPF ISA has
 * no count-leading-zeros. */
static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0;
	if (v >> 32) { r += 32; v >>= 32; }
	if (v >> 16) { r += 16; v >>= 16; }
	if (v >> 8) { r += 8; v >>= 8; }
	if (v >> 4) { r += 4; v >>= 4; }
	if (v >> 2) { r += 2; v >>= 2; }
	if (v >> 1) { r += 1; }
	return r;
}

/* Log-linear slot of v: values below 8 are their own slot; above, the
 * power of two (msb << 3) plus 3 bits of mantissa, 8 slots per power of
 * two, so a slot's width is at most 12.5% of its values. Go's
 * runqlat.SlotValue is the inverse. */
static __always_inline __u32 log_linear_slot(__u64 v)
{
	if (v < 8)
		return (__u32)v;
	__u32 msb = log2_u64(v);
	return (msb << 3) | (__u32)((v >> (msb - 3)) & 7);
}

/* A slot of one of a tool's log-linear histograms, the key of its counts
 * map (Go's bpfskel.SlotKey, read by bpfskel.ReadSlots). */
struct sonde_slot {
	__u32 group; /* the histogram: a pid, tid or irq; 0 when there is one */
	__u32 slot;  /* log_linear_slot() of the value */
};

/* How a histogram tool keeps its distributions apart (its split option:
 * bcc's -P and -L); Go's bpfskel.Split, whose values bpfgen checks. */
enum sonde_split {
	SONDE_SPLIT_NONE = 0, /* one distribution */
	SONDE_SPLIT_PID = 1,  /* one per process */
	SONDE_SPLIT_TID = 2,  /* one per thread */
};

/* The distribution (group) a task's event goes to under split. */
static __always_inline __u32 split_group(__u32 split, __u32 tgid, __u32 tid)
{
	return split == SONDE_SPLIT_PID ? tgid : split == SONDE_SPLIT_TID ? tid : 0;
}

#endif
