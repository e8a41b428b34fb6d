//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* deadlock: the lock-order graph of pthread mutexes and rwlocks, kept in
 * the kernel. Uprobes on the lock functions keep each thread's held locks;
 * every acquisition while others are held adds an edge (held -> acquired)
 * per ordered pair, with the stacks where each lock was taken the first
 * time the pair was seen. User space looks for cycles. Locks are taken
 * at the entry of the blocking calls (the thread is committed to wait);
 * try-locks count only when their return value says they succeeded, and
 * add no edge (they cannot wait, so cannot deadlock). */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "sonde_target.h"
#include "sonde_regs.h"
#define SONDE_UNWIND
#include "sonde_stack.h"
#include "sonde_tp.h"
#include "deadlock.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

KEEP_TYPE(enum dl_mode, dl_mode);
KEEP_TYPE(enum dl_kind, dl_kind);
KEEP_TYPE(enum dl_limit, dl_limit);


struct held_lock {
	__u64 addr;
	__u64 stack;   /* key in unwind_stacks, 0: none */
	__u32 mode;    /* enum dl_mode */
	__u16 depth;   /* times taken by this thread (recursive mutexes, read locks) */
	__u16 partial; /* the stack was walked without the process's tables */
};

struct held {
	__u32 n;
	__u32 _pad;
	struct held_lock locks[DL_MAX_HELD];
};

/* key: tid (u32); value: the locks the thread holds now, in no order.
 * Kept while the thread lives (n may be 0), deleted at its exit, so the
 * hot path updates in place and never inserts twice. */
HASH_MAP(held, __u32, struct held, 16384);

struct pending {
	__u64 addr;
	__u32 mode;
	__u32 _pad;
};

/* key: tid (u32); value: the try-lock in progress (address, mode), from
 * its entry to its return. */
HASH_MAP(pending, __u32, struct pending, 16384);

/* key: struct dl_edge_key (process, held lock, acquired lock, modes);
 * value: struct dl_edge (first thread and stacks, acquisitions). The
 * lock-order graph. */
HASH_MAP(edges, struct dl_edge_key, struct dl_edge, 65536);

/* key: enum dl_counter; value: events (u64), per CPU. */
ENUM_COUNTERS(counters, enum dl_counter, DL_C_MAX);

/* A zeroed held set, the initial value of a thread's entry. */
static const struct held empty_held;

/* The walk, as a global function: the verifier checks it once, alone,
 * instead of at every state the lock programs reach it in (which
 * exceeds its budget). */
__noinline __u64 take_stack(void)
{
	return unwind_user_stack();
}

/* Where a blocking lock function was entered from: the stack pointer,
 * the return address, the caller's frame pointer and its return address.
 * Two calls with the same four come from the same two innermost frames
 * at the same stack addresses. */
struct memo_key {
	__u64 sp;
	__u64 ret;
	__u64 fp;
	__u64 ret2;
	__u32 pid;
	__u32 _pad;
};

/* key: struct memo_key; value: the key of the stack walked there (u64,
 * in unwind_stacks). A call from the same place reuses the walk: the
 * table walk costs about a microsecond, a lock loop calls from the same
 * few places millions of times. Only whole walks are kept. LRU: places
 * not seen for long age out. */
SONDE_MAP(memo, BPF_MAP_TYPE_LRU_HASH, struct memo_key, __u64, 16384);

/* The memo key of this entry; false when it cannot be read. */
static __always_inline bool memo_key(void *ctx, struct memo_key *k)
{
	k->sp = reg_sp(ctx);
	k->fp = reg_fp(ctx);
	if (!reg_entry_ret(ctx, &k->ret))
		return false;
	/* Without a frame pointer this reads whatever the register points
	 * at, or fails: the key is still the same for the same place. */
	bpf_probe_read_user(&k->ret2, sizeof(k->ret2), (void *)(k->fp + 8));
	return true;
}

/* Whether the stack just walked lacks the process's tables (see
 * DL_PARTIAL_FROM): the walker leaves its flags in its scratch. */
static __always_inline bool walk_partial(void)
{
	__u32 zero = 0;
	struct unwind_state *st = bpf_map_lookup_elem(&unwind_scratch, &zero);
	return !st || (st->out.flags & (UNWIND_F_NO_MAPPING | UNWIND_F_PROC_UNKNOWN));
}

/* Add the edge held -> acquired, or count it again. */
static __always_inline void add_edge(struct held_lock *h, __u64 addr, __u32 mode, __u64 stack, bool partial, __u64 id)
{
	struct dl_edge_key k = {.from = h->addr, .to = addr, .pid = id >> 32, .from_mode = h->mode, .to_mode = mode};
	__u32 bits = (h->partial ? DL_PARTIAL_FROM : 0) | (partial ? DL_PARTIAL_TO : 0);
	struct dl_edge *e = bpf_map_lookup_elem(&edges, &k);
	if (e) {
		__sync_fetch_and_add(&e->count, 1);
		if (e->partial && !bits) {
			/* Whole stacks now: they replace the first, partial ones
			 * (two CPUs racing here both write whole stacks). */
			e->from_stack = h->stack;
			e->to_stack = stack;
			e->tid = (__u32)id;
			bpf_get_current_comm(&e->comm, sizeof(e->comm));
			e->partial = 0;
		}
		return;
	}
	struct dl_edge v = {.from_stack = h->stack, .to_stack = stack, .count = 1, .tid = (__u32)id, .partial = bits};
	bpf_get_current_comm(&v.comm, sizeof(v.comm));
	/* -EEXIST: another CPU added it first; its first sighting stands. */
	long err = bpf_map_update_elem(&edges, &k, &v, BPF_NOEXIST);
	if (err && err != -17)
		counter_inc(&counters, DL_C_EDGES_FULL);
}

struct find_args {
	struct held *hs;
	__u64 addr;
	__u32 n;
	__s32 found; /* index, -1: not held */
};

/* Index i of a held set, masked into the array. i's range is hidden from
 * the compiler first (the loop callbacks check i < n), so the mask the
 * verifier needs as a bound stays in the code. */
static __always_inline __u32 held_index(__u32 i)
{
	asm volatile("" : "+r"(i));
	return i & (DL_MAX_HELD - 1);
}

static long find_step(__u32 i, void *data)
{
	struct find_args *a = data;
	if (i >= a->n)
		return 1;
	__u32 k = held_index(i);
	if (a->hs->locks[k].addr == a->addr) {
		a->found = k;
		return 1;
	}
	return 0;
}

/* The entry of addr in the thread's held set, NULL when not held. */
static __always_inline struct held_lock *find_held(struct held *hs, __u64 addr)
{
	__u32 n = hs->n;
	if (n > DL_MAX_HELD)
		n = DL_MAX_HELD;
	struct find_args a = {.hs = hs, .addr = addr, .n = n, .found = -1};
	if (n > 0)
		bpf_loop(n, find_step, &a, 0);
	if (a.found < 0)
		return NULL;
	return &hs->locks[a.found & (DL_MAX_HELD - 1)];
}

/* The arguments of edge_step, on the caller's stack. */
struct edge_args {
	struct held *hs;
	__u64 addr;
	__u64 stack;
	__u64 id;
	__u32 mode;
	__u32 partial;
	__u32 n;
};

/* bpf_loop body: the edge from held lock i to the lock acquired. A loop
 * callback is verified once, where an inlined loop of DL_MAX_HELD edge
 * updates would be verified along every path. */
static long edge_step(__u32 i, void *data)
{
	struct edge_args *a = data;
	if (i >= a->n)
		return 1;
	add_edge(&a->hs->locks[held_index(i)], a->addr, a->mode, a->stack, a->partial, a->id);
	return 0;
}

/* The stack of this acquisition: remembered for its place (memo), or
 * walked. ctx is NULL at a try-lock's return, which walks every time. */
static __always_inline __u64 stack_of(void *ctx, __u32 pid, bool *partial)
{
	struct memo_key k = {.pid = pid};
	bool keyed = ctx && memo_key(ctx, &k);
	if (keyed) {
		__u64 *known = bpf_map_lookup_elem(&memo, &k);
		if (known) {
			*partial = false;
			counter_inc(&counters, DL_C_STACK_REUSED);
			return *known;
		}
	}
	__u64 stack = take_stack();
	*partial = walk_partial();
	if (!stack)
		counter_inc(&counters, DL_C_STACK_FAILED);
	else if (keyed && !*partial)
		bpf_map_update_elem(&memo, &k, &stack, BPF_ANY);
	return stack;
}

static __always_inline void acquire(void *ctx, __u64 id, __u64 addr, __u32 mode, bool try)
{
	__u32 tid = (__u32)id;
	counter_inc(&counters, DL_C_ACQUIRE);
	struct held *hs = lookup_or_init(&held, &tid, &empty_held);
	if (!hs) {
		counter_inc(&counters, DL_C_THREADS_FULL);
		return;
	}
	__u32 n = hs->n;
	/* The holder taking it again (a recursive mutex, a second read
	 * lock) orders nothing. */
	struct held_lock *again = find_held(hs, addr);
	if (again) {
		again->depth++;
		counter_inc(&counters, DL_C_RECURSIVE);
		return;
	}
	if (n >= DL_MAX_HELD) {
		counter_inc(&counters, DL_C_HELD_FULL);
		return;
	}
	bool partial;
	__u64 stack = stack_of(ctx, id >> 32, &partial);
	if (!try && n > 0) {
		struct edge_args a = {.hs = hs, .addr = addr, .stack = stack, .id = id, .mode = mode, .partial = partial, .n = n};
		bpf_loop(n, edge_step, &a, 0);
	}
	struct held_lock *l = &hs->locks[n & (DL_MAX_HELD - 1)];
	l->addr = addr;
	l->stack = stack;
	l->mode = mode;
	l->depth = 1;
	l->partial = partial;
	hs->n = n + 1;
}

static __always_inline void release(__u64 id, __u64 addr)
{
	__u32 tid = (__u32)id;
	struct held *hs = bpf_map_lookup_elem(&held, &tid);
	if (!hs) {
		counter_inc(&counters, DL_C_UNKNOWN_RELEASE);
		return;
	}
	struct held_lock *l = find_held(hs, addr);
	if (!l) {
		counter_inc(&counters, DL_C_UNKNOWN_RELEASE);
		return;
	}
	counter_inc(&counters, DL_C_RELEASE);
	if (l->depth > 1) {
		l->depth--;
		return;
	}
	/* Order in the set does not matter: the last fills the hole. */
	__u32 n = hs->n;
	if (n == 0)
		return;
	*l = hs->locks[(n - 1) & (DL_MAX_HELD - 1)];
	hs->n = n - 1;
}

/* Every lock function's entry, told apart by the attach cookie (kind <<
 * DL_KIND_SHIFT | mode): one program, so one uprobe_multi link holds them
 * all (a link per function took the kernel 80-95 ms each to remove). */
static __always_inline int lock_entry(void *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), id;
	__u32 mode = cookie & ((1 << DL_KIND_SHIFT) - 1);
	if (!current_traced(&id))
		return 0;
	switch (cookie >> DL_KIND_SHIFT) {
	case DL_LOCK:
		/* pthread_mutex_lock, pthread_rwlock_rdlock, pthread_rwlock_wrlock */
		acquire(ctx, id, reg_arg(ctx, 0), mode, false);
		break;
	case DL_TRYLOCK: {
		/* Remember what it tries until it returns. */
		__u32 tid = (__u32)id;
		struct pending p = {.addr = reg_arg(ctx, 0), .mode = mode};
		bpf_map_update_elem(&pending, &tid, &p, BPF_ANY);
		break;
	}
	case DL_UNLOCK:
		/* pthread_mutex_unlock, pthread_rwlock_unlock */
		release(id, reg_arg(ctx, 0));
		break;
	}
	return 0;
}

/* Return of a try-lock: 0 means it took the lock. */
static __always_inline int trylock_return(void *ctx)
{
	__u64 id;
	if (!current_traced(&id))
		return 0;
	__u32 tid = (__u32)id;
	struct pending v;
	if (!map_take(&pending, &tid, &v))
		return 0;
	if ((long)reg_ret(ctx) != 0) {
		counter_inc(&counters, DL_C_TRY_FAILED);
		return 0;
	}
	acquire(NULL, id, v.addr, v.mode, true);
	return 0;
}

/* Each as a uprobe.multi program (one link for every function) and a
 * plain uprobe one (a link each, kernels before 6.6); the loader keeps one. */
UPROBE_OR_MULTI("uprobe", lock_entry, lock_entry(ctx))
UPROBE_OR_MULTI("uretprobe", trylock_return, trylock_return(ctx))

/* A thread's end: its held set and any try-lock in flight go. */
TP_BTF_OR_RAW(sched_process_exit, deadlock_exit)
{
	__u64 id;
	if (!current_traced(&id))
		return 0;
	__u32 tid = (__u32)id;
	bpf_map_delete_elem(&held, &tid);
	bpf_map_delete_elem(&pending, &tid);
	return 0;
}
