/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Shared between deadlock.bpf.c and Go (bpf2go -type). */
#ifndef SONDE_DEADLOCK_H
#define SONDE_DEADLOCK_H

/* Locks one thread can hold at once in the program's view; more are
 * counted (DL_C_HELD_FULL) and not tracked. */
#define DL_MAX_HELD 16

/* The same, for Go (bpf2go -type). */
enum dl_limit {
	DL_LIMIT_HELD = DL_MAX_HELD,
};

/* How a lock is taken: the attach cookie of each probe. A mutex and an
 * rwlock's write side are exclusive; a read lock is shared. */
enum dl_mode {
	DL_MUTEX = 0,
	DL_WRITE = 1,
	DL_READ = 2,
};

/* Which kind of function a probe is on. One program serves every entry
 * (one uprobe_multi link for all): the attach cookie is
 * kind << DL_KIND_SHIFT | mode. */
enum dl_kind {
	DL_LOCK = 0,    /* a blocking lock: taken at its entry */
	DL_TRYLOCK = 1, /* a try-lock: remembered at its entry, taken at its return if it succeeded */
	DL_UNLOCK = 2,  /* an unlock: released at its entry */
	DL_KIND_SHIFT = 8,
};

/* One ordered pair: a lock held (from) while another was acquired (to),
 * in one process, with the modes of both. */
struct dl_edge_key {
	__u64 from; /* address of the held lock */
	__u64 to;   /* address of the lock acquired */
	__u32 pid;
	__u8 from_mode; /* enum dl_mode */
	__u8 to_mode;
	__u16 _pad;
};

/* The first time the pair was seen: who, and where each lock was taken;
 * count is every time since. */
struct dl_edge {
	__u64 from_stack; /* key in unwind_stacks of where from was taken, 0: none */
	__u64 to_stack;   /* the same for to */
	__u64 count;      /* acquisitions of to while from was held */
	__u32 tid;
	__u32 partial; /* DL_PARTIAL_* bits: a stack walked before its process's tables were loaded */
	char comm[16];
};

/* Which stacks of an edge are partial (walked by frame pointers before
 * the unwinder had the process's tables; the caller of the lock function
 * may be missing). A later sighting with whole stacks replaces them. */
#define DL_PARTIAL_FROM 1
#define DL_PARTIAL_TO 2

enum dl_counter {
	DL_C_ACQUIRE = 0,       /* acquisitions seen (successful try-locks included) */
	DL_C_RELEASE = 1,       /* releases of a tracked lock */
	DL_C_TRY_FAILED = 2,    /* try-locks that returned busy (nothing taken) */
	DL_C_RECURSIVE = 3,     /* re-locks of a lock the thread holds (no edge) */
	DL_C_EDGES_FULL = 4,    /* new pairs dropped: the edge map was full */
	DL_C_HELD_FULL = 5,     /* acquisitions not tracked: DL_MAX_HELD held already */
	DL_C_THREADS_FULL = 6,  /* acquisitions not tracked: the thread map was full */
	DL_C_STACK_FAILED = 7,  /* acquisitions whose stack could not be taken */
	DL_C_UNKNOWN_RELEASE = 8, /* releases of a lock not seen taken (taken before tracing) */
	DL_C_STACK_REUSED = 9,  /* acquisitions whose stack was the one walked at the same place before */
	DL_C_MAX = 10,
};

#endif
