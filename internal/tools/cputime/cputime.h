/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
#ifndef SONDE_CPUTIME_H
#define SONDE_CPUTIME_H

/* Per task, per CPU (the map is per-CPU): on-CPU time since tracing began. */
struct cputime_val {
	__u64 ns;
	__u32 pid;
	__u32 _pad;
	char comm[16];
};

/* Per CPU: the task on it now and its se.sum_exec_runtime when it came in,
 * so user space can add the running slice (the task's runtime now, from
 * schedstat, less base). seen is 0 until the first switch on the CPU. */
struct cputime_curr {
	__u64 base; /* the task's se.sum_exec_runtime when it came in (ns) */
	__u32 tid;
	__u32 pid;
	__u32 seen;
	__u32 _pad;
};

/* Indexes of the lost counters. */
enum cputime_counter {
	CPUTIME_LOST_FULL = 0, /* slices lost because the times map was full */
	CPUTIME_UNSEEN = 1,    /* switches the program was not told about */
	CPUTIME_NCOUNTERS = 2,
};

#endif
