/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
#ifndef SONDE_RUNQLAT_H
#define SONDE_RUNQLAT_H

/* A histogram slot: log2 of the latency in ns with 3 bits of mantissa
 * (8 slots per power of two, so percentiles are within 12.5%). */
struct runqlat_key {
	__u32 group; /* pid, tid or cgroup id (low 32 bits); 0 when not split */
	__u32 slot;
};

#endif
