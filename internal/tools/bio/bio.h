/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Shared between bio.bpf.c and Go (bpf2go -type). */
#ifndef SONDE_BIO_H
#define SONDE_BIO_H

/* A request's stages, each a histogram of its own. */
enum bio_stage {
	BIO_QUEUED = 0, /* insert → issue */
	BIO_DEVICE = 1, /* issue → complete */
	BIO_TOTAL = 2,  /* insert (issue when not inserted) → complete */
	BIO_NSTAGES = 3,
};

/* One histogram: a stage, on one disk (0 when not split by disk). */
struct bio_group {
	__u32 dev;   /* the kernel's dev_t: major << 20 | minor */
	__u32 stage; /* enum bio_stage */
};

/* A slot of one histogram. */
struct bio_hist_key {
	struct bio_group g;
	__u32 slot; /* hist_slot() of the time in ns */
	__u32 unused;
};

/* What did not go into a histogram. The requests that did are counted
 * by the histograms themselves: no counter on the path of every request. */
enum bio_counter {
	BIO_UNMATCHED = 0, /* completions of a request not timed (begun before) */
	BIO_FULL = 1,      /* a start lost with the start map full */
	/* BIO_LOST_QUEUED + stage: a time lost with the histogram map full */
	BIO_LOST_QUEUED = 2,
	BIO_LOST_DEVICE = 3,
	BIO_LOST_TOTAL = 4,
	BIO_NCOUNTERS = 5,
};

#endif
