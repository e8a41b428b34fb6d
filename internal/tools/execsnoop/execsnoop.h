/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* execsnoop's records, shared by the BPF program and Go (bpfgen -type). */
#ifndef EXECSNOOP_H
#define EXECSNOOP_H

#define EXECSNOOP_MAX_ARGS 20  /* arguments kept per exec (bcc's default) */
#define EXECSNOOP_ARG_SIZE 128 /* bytes kept per argument, with its NUL */

/* One exec: who called it, what it returned, and its argument list. */
struct execsnoop_event {
	__u64 time_ns;   /* when execve returned, CLOCK_MONOTONIC ns */
	__u32 pid;       /* process (tgid) */
	__u32 ppid;      /* its parent's process id */
	__u32 uid;
	__s32 ret;       /* 0, or -errno of a failed exec */
	__u32 args;      /* arguments kept (at most EXECSNOOP_MAX_ARGS) */
	__u32 cut;       /* 1: more arguments than kept, or one cut short */
	char comm[16];   /* the task's name once execve returned */
	char argv[EXECSNOOP_MAX_ARGS][EXECSNOOP_ARG_SIZE];
};

#endif
