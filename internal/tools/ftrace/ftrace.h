/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Shared between ftrace.bpf.c and Go (bpf2go -type). */
#ifndef SONDE_FTRACE_H
#define SONDE_FTRACE_H

/* Calls kept per thread in the shadow stack; deeper calls are counted in
 * depth but not timed (counter "overflow"). */
#define FTRACE_STACK 64
/* Integer arguments an -A spec can ask for (arg1..arg6). */
#define FTRACE_ARGS 6

/* Counters (key of the counters map; bpfskel.Counters reads them by name). */
enum ftrace_counter {
	FTRACE_C_LOST = 0,      /* calls not sent: the ring buffer was full */
	FTRACE_C_OVERFLOW = 1,  /* calls deeper than FTRACE_STACK: counted, not timed */
	FTRACE_C_UNMATCHED = 2, /* returns without their entry (entered before the attach) */
	FTRACE_C_NOSTACK = 3,   /* entries with no shadow stack (more than 1024 threads) */
	FTRACE_C_FILTERED = 4,  /* calls left out by the depth and duration filters */
	FTRACE_NCOUNTERS = 5,
};

/* flags of ftrace_event */
#define FTRACE_HAS_RET 1 /* retval holds the return value */

/* One completed call, sent when the function returns and passes the
 * depth and minimum-duration filters. */
struct ftrace_event {
	__u64 start_ns;    /* entry, CLOCK_MONOTONIC */
	__u64 duration_ns; /* entry to return */
	__u64 key;         /* what the depth is counted per: tid, or the goroutine (g) for Go */
	__u64 args[FTRACE_ARGS];
	__u64 retval;
	__u32 pid;
	__u32 tid;   /* thread at the return */
	__u32 fn;    /* index of the function (the attach cookie) */
	__u16 depth; /* 0 for the outermost traced call of the thread */
	__u8 nargs;  /* args[0..nargs) are set */
	__u8 flags;  /* FTRACE_HAS_RET */
};

/* What to capture for one function (index: the attach cookie). */
struct ftrace_fncfg {
	__u8 nargs;    /* integer arguments to read at entry */
	__u8 want_ret; /* read the return value */
	__u8 _pad[2];
};

/* One call in progress. */
struct ftrace_frame {
	__u64 start_ns;
	__u64 args[FTRACE_ARGS];
	__u64 sp;  /* Go: stack pointer at the entry */
	__u64 ret; /* Go: return address at the entry */
	__u32 fn;
	__u8 nargs;
	__u8 _pad[3];
};

/* A thread's (or goroutine's) calls in progress; read by user space at
 * the end for the calls that never returned. */
struct ftrace_shadow {
	__u32 depth; /* calls in progress, including those beyond FTRACE_STACK */
	__u32 pid;
	__u32 tid;
	__u32 entered; /* the last event was the entry of the top frame */
	/* the thread's name at its first traced call: user space names
	 * threads by it when they are gone from /proc before their calls are
	 * read (a short command) */
	char comm[16];
	struct ftrace_frame frames[FTRACE_STACK];
};

#endif
