/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* exitsnoop's records, shared by the BPF program and Go (bpfgen -type). */
#ifndef EXITSNOOP_H
#define EXITSNOOP_H

/* One exit: of a process (its last thread), or of a thread with per_thread. */
struct exitsnoop_event {
	__u64 time_ns;   /* when it exited, CLOCK_MONOTONIC ns */
	__u64 age_ns;    /* ns since the process (or thread) was forked */
	__u32 pid;       /* process (tgid) */
	__u32 tid;       /* the exiting thread */
	__u32 ppid;      /* its parent's process id */
	__s32 exit_code; /* the wait status: code << 8, or the signal (| 0x80 core dumped) */
	char comm[16];
};

enum exitsnoop_counter {
	EXITSNOOP_LOST_RING, /* exits not reported: the ring buffer was full */
	EXITSNOOP_COUNTERS,
};

#endif
