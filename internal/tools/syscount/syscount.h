/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
#ifndef SONDE_SYSCOUNT_H
#define SONDE_SYSCOUNT_H

struct syscount_key {
	__u32 pid; /* 0 unless counting per process */
	__u32 nr;  /* syscall number */
};

struct syscount_val {
	__u64 count;
	__u64 total_ns; /* with latency */
	__u64 max_ns;
	__u64 errors;   /* returns < 0 */
	char comm[16];
};

#endif
