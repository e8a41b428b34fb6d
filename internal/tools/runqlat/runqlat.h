/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Shared between runqlat.bpf.c and Go (bpf2go -type). */
#ifndef SONDE_RUNQLAT_H
#define SONDE_RUNQLAT_H

/* Indexes of the switches counters. */
enum runqlat_counter {
	RUNQLAT_SWITCHES = 0, /* tasks switched in */
	RUNQLAT_UNKNOWN = 1,  /* ... whose wait began before tracing */
	RUNQLAT_NCOUNTERS = 2,
};

#endif
