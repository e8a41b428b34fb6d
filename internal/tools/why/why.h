/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Shared between why.bpf.c and Go (bpf2go -type). */
#ifndef SONDE_WHY_H
#define SONDE_WHY_H

/* Where a thread's time is going now (struct why_thread.state). */
enum why_state {
	WHY_UNSEEN = 0,  /* no event yet: how it spent the time before is settled by the first one */
	WHY_ON = 1,      /* on a CPU */
	WHY_RUNQ = 2,    /* runnable, waiting for a CPU */
	WHY_BLOCKED = 3, /* off the CPU until something wakes it */
	WHY_DEAD = 4,    /* exited: its time ended at why_thread.end */
};

/* Syscall numbers that are not syscalls (why_key.syscall). */
#define WHY_NO_SYSCALL (-1)  /* not in a syscall */
#define WHY_BEFORE (-2)      /* blocked since before the start: user space names it from /proc */

/* One thread's accounts, all in ns, from begin (the start of tracing or
 * its creation) to end (its exit or the end of tracing). Every interval
 * lands in exactly one of on_cpu (+ irq), runq, throttled, blocked. A
 * slice on a CPU is split by the kernel's own runtime counter
 * (se.sum_exec_runtime, what /proc/TID/schedstat shows): on_cpu is the
 * task's, irq the rest (interrupt and softirq time the kernel accounts
 * apart, and time the hypervisor stole). */
struct why_thread {
	__u64 begin;
	__u64 end;          /* 0 while alive */
	__u64 ts;           /* when the current state began */
	__u64 on_cpu_ns;
	__u64 runq_ns;
	__u64 throttled_ns; /* runnable while its cgroup was out of CPU quota */
	__u64 blocked_ns;
	__u64 irq_ns;       /* on a CPU but not the task's by the kernel: interrupts, softirqs, steal */
	__u64 exec_base;    /* se.sum_exec_runtime at its switch-in (0: not seen) */
	__u64 exec_out;     /* se.sum_exec_runtime as it last went off CPU: its switch-out or its wake (0: not seen) */
	__u64 last_runq;    /* the runnable interval that ended at that switch-in, ns */
	__u32 last_runq_throttled; /* that interval was counted as throttled */
	__u32 pad;
	__u32 pid;
	__u32 state;        /* enum why_state */
	__s32 syscall;      /* the syscall it is in, WHY_NO_SYSCALL outside */
	__u32 depth;        /* 0: a target thread; n: it woke a thread n-1 hops from one */
	__u32 throttled;    /* the current runnable interval began with its cgroup throttled */
	__s32 block_kstack; /* the block in progress: kernel stack id */
	__u64 block_ustack; /* its user stack (key in unwind_stacks, 0: none) */
	__s32 block_syscall;
	__s32 last_kstack;  /* its last completed block, for the chain of those it wakes */
	__u64 last_ustack;
	__s32 last_syscall;
	__u32 last_waker;   /* tid that ended the last block (0: none seen) */
	__u64 last_ns;      /* how long the last block lasted */
	__u64 last_end;     /* when it ended (0: never blocked since tracked) */
	__u64 tick_pend;    /* runtime (ns) of the slice under way not yet charged to a stack */
	__u64 tick_charged; /* ns of the slice under way charged to stacks sampled in it */
	char comm[16];
};

/* One bucket of blocked time: who blocked where, who woke them from
 * where, and how that waker had itself last blocked. */
struct why_key {
	__u32 pid;
	__u32 tid;
	__u64 user_stack;        /* key in unwind_stacks, 0: none */
	__s32 kernel_stack;      /* id in stacks, or a negative errno */
	__s32 syscall;           /* nr, or WHY_NO_SYSCALL, WHY_BEFORE */
	__u32 waker_pid;         /* 0: woken from the idle task (an interrupt) */
	__u32 waker_tid;
	__u64 waker_user_stack;
	__s32 waker_kernel_stack;
	__s32 waker_last_syscall; /* the waker's last block (WHY_NO_SYSCALL with no last block) */
	__u64 waker_last_user_stack;
	__s32 waker_last_kernel_stack;
	__u32 waker_last_waker;  /* who ended the waker's last block */
	char comm[16];
	char waker_comm[16];
};

#define WHY_SLOTS 32 /* log2 slots of a wait's length in µs: slot i holds [2^i, 2^(i+1)) µs */

/* The time in one bucket. */
struct why_wait {
	__u64 ns;             /* blocked ns */
	__u64 count;          /* blocks */
	__u64 waker_ran_ns;   /* summed: how long the waker had been awake (since its last block) when it woke */
	__u64 waker_last_ns;  /* summed: how long that last block of the waker's lasted */
	__u64 slots[WHY_SLOTS];
};

/* Control words user space writes (key: enum why_ctl; value: u64 ns,
 * CLOCK_MONOTONIC): nothing before start or after stop is counted. */
enum why_ctl {
	WHY_CTL_START = 0,
	WHY_CTL_STOP = 1,
	WHY_CTL_MAX = 2,
};

enum why_error {
	WHY_ERR_STACK = 0,   /* a stack walk failed */
	WHY_ERR_FULL = 1,    /* a map was full: time lost */
	WHY_ERR_THREADS = 2, /* the thread table was full: a thread not followed */
	WHY_ERR_UNSEEN = 3,  /* a switch not seen (found at the next switch or tick): the gap is split by the runtime counter */
	WHY_ERR_TICK = 4,    /* not an error: stacks sampled inside a slice (on_runtime) */
	WHY_ERR_MAX = 5,
};

#endif
