/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* opensnoop's records, shared by the BPF program and Go (bpfgen -type). */
#ifndef OPENSNOOP_H
#define OPENSNOOP_H

#define OPENSNOOP_PATH 256 /* bytes of the path kept, with its NUL (bcc keeps 255) */

enum opensnoop_call {
	OPENSNOOP_OPEN,
	OPENSNOOP_OPENAT,
	OPENSNOOP_OPENAT2,
};

/* One open, sent when it returns. */
struct opensnoop_event {
	__u64 time_ns; /* when it returned, CLOCK_MONOTONIC ns */
	__u64 flags;   /* the open flags (O_*), as the call was given them */
	__u32 pid;     /* process (tgid) */
	__u32 tid;
	__u32 uid;
	__s32 ret;     /* the new fd, or -errno */
	__u32 mode;    /* the mode given with O_CREAT or O_TMPFILE */
	__u32 call;    /* enum opensnoop_call */
	char comm[16];
	char path[OPENSNOOP_PATH]; /* as the call named it; cut to OPENSNOOP_PATH-1 bytes */
};

#endif
