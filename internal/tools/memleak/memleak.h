/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Shared between memleak.bpf.c and Go (bpf2go -type). */
#ifndef SONDE_MEMLEAK_H
#define SONDE_MEMLEAK_H

/* Where outstanding memory was allocated. */
struct memleak_stack {
	__u64 user_stack;   /* key in unwind_stacks, 0: none */
	__s32 kernel_stack; /* id in stacks, or a negative errno */
	__u32 pid;
};

/* What a stack still holds. Estimates under sampling: bytes are scaled to
 * the population; count is in 1/COUNT_ONE of an allocation so a sampled
 * allocation can stand for a fraction (byte sampling weighs a small one
 * by B/size). Signed: a free may pass its allocation on another CPU. */
struct memleak_total {
	__s64 bytes;
	__s64 count;
};

/* One outstanding allocation (key: its address). */
struct memleak_alloc {
	__u64 bytes;   /* estimated bytes it stands for (its size unsampled) */
	__u64 count;   /* allocations it stands for, in 1/COUNT_ONE */
	__u64 ts;      /* when it was made, CLOCK_MONOTONIC ns */
	__u64 size;    /* its real size in bytes */
	struct memleak_stack where;
};

#define COUNT_ONE 1024

/* Entry points, passed as the attach cookie: FN_ and the function's name in
 * capitals (Go reads the values by these names from the object's BTF). */
enum memleak_fn {
	FN_MALLOC = 0,         /* malloc(size) */
	FN_CALLOC = 1,         /* calloc(n, size) */
	FN_REALLOC = 2,        /* realloc(ptr, size) */
	FN_REALLOCARRAY = 3,   /* reallocarray(ptr, n, size) */
	FN_POSIX_MEMALIGN = 4, /* posix_memalign(&ptr, align, size) */
	FN_ALIGNED_ALLOC = 5,  /* aligned_alloc(align, size) */
	FN_MEMALIGN = 6,       /* memalign(align, size) */
	FN_VALLOC = 7,         /* valloc(size) */
	FN_PVALLOC = 8,        /* pvalloc(size) */
	FN_MMAP = 9,           /* mmap(addr, len, ...) */
	FN_FREE = 10,          /* free(ptr) */
	FN_MUNMAP = 11,        /* munmap(addr, len) */
	FN_MAX = 12,
};

enum memleak_counter {
	MEMLEAK_MISSED_FREE = 0, /* free() of an address not tracked (made before tracing, or not sampled) */
	MEMLEAK_MAP_FULL = 1,    /* an allocation not tracked: a map was full */
	MEMLEAK_STACK_FAIL = 2,  /* a stack walk failed */
	MEMLEAK_SAMPLED = 3,     /* allocations tracked (sampled) */
	MEMLEAK_CALLS = 4,       /* allocation calls seen */
	MEMLEAK_FREES = 5,       /* frees of tracked addresses */
	MEMLEAK_COUNTER_MAX = 6,
};

#endif
