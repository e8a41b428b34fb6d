/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Shared between runqlat.bpf.c and Go (bpf2go -type). */
#ifndef SONDE_RUNQLAT_H
#define SONDE_RUNQLAT_H

/* A histogram slot: log_linear_slot() of the latency in ns (8 slots per
 * power of two, so percentiles are within 12.5%). */
struct runqlat_key {
	__u32 group; /* pid or tid; 0 when not split */
	__u32 slot;
};

/* Indexes of the switches counters. */
enum runqlat_counter {
	RUNQLAT_SWITCHES = 0, /* tasks switched in */
	RUNQLAT_UNKNOWN = 1,  /* ... whose wait began before tracing */
	RUNQLAT_NCOUNTERS = 2,
};

#endif
