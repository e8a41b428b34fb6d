/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Shared between pair.bpf.c and Go (bpf2go -type). */
#ifndef SONDE_PAIR_H
#define SONDE_PAIR_H

#define PAIR_MAX_KEYS 4

/* The values of the key fields (or the thread id), zero-padded. */
struct pair_key {
	__u64 v[PAIR_MAX_KEYS];
};

/* One matched start → end, sent to user space through the ring buffer. */
struct pair_event {
	__u64 key[PAIR_MAX_KEYS];
	__u64 start_ns;   /* CLOCK_MONOTONIC */
	__u64 latency_ns;
	__u64 group;      /* value of the --per field at the start, if any */
	__u64 aux;        /* value of one more start field (e.g. nr_sector) */
	__u64 before_ns;  /* with a mid event: start → mid in ns, PAIR_NO_BEFORE
	                   * when only the mid was seen; 0 without one */
	__u32 pid;        /* process and thread that hit the start event */
	__u32 tid;
	char comm[16];
};

/* before_ns when a chain's start was not seen (no I/O scheduler, or it
 * began before tracing). */
#define PAIR_NO_BEFORE (~0ULL)

enum pair_counter {
	PAIR_STARTS = 0,
	PAIR_ENDS = 1,
	PAIR_UNMATCHED = 2, /* an end without a start (began before tracing) */
	PAIR_DROPS = 3,     /* ring buffer full: the pair is lost */
	PAIR_FULL = 4,      /* start map full: the start is lost */
	PAIR_MIDS = 5,      /* mid events seen (chains only) */
	PAIR_NCOUNTERS = 6,
};

#endif
