//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* memleak: memory allocated and not (yet) freed, by stack. User mode puts
 * uprobes on an allocator's entry points and uretprobes on the allocating
 * ones (the attach cookie says which function, enum memleak_fn); kernel
 * mode reads the kmem tracepoints. Each tracked allocation is remembered
 * by address with its size, time and stack, and its stack's running total
 * (bytes, count) goes up at the allocation and down at its free, in the
 * kernel: a report reads one row per stack, not every address. Sampling
 * (every Nth call, or by bytes) decides at the entry, before any work but
 * the in-flight record, and scales what a sampled allocation stands for. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
/* Gated: allocations are tracked from the moment every probe is in place
 * (a malloc probe attached before its free probe would see frees missed)
 * to the moment tracing ends, however long the probes take to attach and
 * detach: the report's duration and ages are that span. */
#define SONDE_GATED
#include "sonde_target.h"
#include "sonde_regs.h"
#define SONDE_UNWIND
#include "sonde_stack.h"
#include "sonde_tp.h"
#include "memleak.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

KEEP_TYPE(enum memleak_fn, memleak_fn);

const volatile __u32 sample_every = 1;  /* track every Nth allocation call (per CPU) */
const volatile __u64 sample_bytes = 0;  /* >0: byte sampling with mean B (at most 2^31) */
const volatile __u64 page_size = 4096;  /* bytes of an order-0 page */
const volatile bool user_stacks = true;
const volatile bool count_missed = true; /* count frees of unknown addresses (user mode) */

/* An allocator call between its entry and its return. */
struct inflight {
	__u64 size;   /* bytes asked for */
	__u64 memptr; /* posix_memalign: where the result will be written */
	__u64 ustack; /* key in unwind_stacks, 0: none */
	__u64 bytes;  /* estimated bytes it stands for (0: not sampled) */
	__u64 count;  /* allocations it stands for, 1/COUNT_ONE */
	__s32 depth;  /* allocator calls open on this thread (nested ones are the allocator's own) */
	__u32 unused;
};

/* key: tid (u32); value: struct inflight, the thread's open allocator
 * call. Hash, not per-CPU: a thread may move CPUs inside malloc. */
HASH_MAP(inflight, __u32, struct inflight, 65536);

/* key: address (u64; a page frame number for mm_page_alloc); value:
 * struct memleak_alloc, one outstanding tracked allocation. Size and
 * preallocation are set by user space before load (kernel mode
 * preallocates: its own allocations must not call the allocator it
 * traces). */
HASH_MAP(allocs, __u64, struct memleak_alloc, 1 << 20);

/* key: struct memleak_stack (stack and process); value: struct
 * memleak_total, bytes (estimated) and allocations (1/COUNT_ONE) it still
 * holds. */
HASH_MAP(totals, struct memleak_stack, struct memleak_total, 65536);

/* Kernel stacks (see sonde_stack.h); user stacks go to unwind_stacks. */
STACK_MAP(stacks, 16384);

/* key: enum memleak_counter; value: events (u64), per CPU. */
ENUM_COUNTERS(counters, enum memleak_counter, MEMLEAK_COUNTER_MAX);

/* key: 0; value: allocation calls seen on this CPU (u64), for -s N. */
PERCPU_COUNTERS(nth, 1);

/* Whether to track an allocation of size bytes, and what it stands for.
 * By bytes: one of at least B always, a smaller one with probability
 * size/B, standing for B bytes and B/size allocations (the first-order
 * rate of a Poisson process sampling every B bytes, as tcmalloc and the
 * OpenTelemetry profiler do). Every Nth: the Nth call on a CPU, standing
 * for N. */
static __always_inline bool sample(__u64 size, __u64 *bytes, __u64 *count)
{
	if (sample_bytes) {
		if (size >= sample_bytes) {
			*bytes = size;
			*count = COUNT_ONE;
			return true;
		}
		if (size == 0 || (__u64)bpf_get_prandom_u32() * sample_bytes >= size << 32)
			return false;
		*bytes = sample_bytes;
		*count = COUNT_ONE * sample_bytes / size;
		return true;
	}
	if (sample_every > 1) {
		__u32 zero = 0;
		__u64 *n = bpf_map_lookup_elem(&nth, &zero);
		if (!n || ++*n % sample_every)
			return false;
		*bytes = size * sample_every;
		*count = COUNT_ONE * sample_every;
		return true;
	}
	*bytes = size;
	*count = COUNT_ONE;
	return true;
}

static __always_inline void total_add(struct memleak_stack *where, __s64 bytes, __s64 count)
{
	struct memleak_total zero = {};
	struct memleak_total *t = lookup_or_init(&totals, where, &zero);
	if (!t)
		return;
	__sync_fetch_and_add(&t->bytes, bytes);
	__sync_fetch_and_add(&t->count, count);
}

/* The allocation at addr is gone: take it off its stack's total. */
static __always_inline void forget(__u64 addr, bool is_free)
{
	struct memleak_alloc *a = bpf_map_lookup_elem(&allocs, &addr);
	if (!a) {
		if (is_free && count_missed && addr)
			counter_inc(&counters, MEMLEAK_MISSED_FREE);
		return;
	}
	struct memleak_total *t = bpf_map_lookup_elem(&totals, &a->where);
	if (t) {
		__sync_fetch_and_add(&t->bytes, -(__s64)a->bytes);
		__sync_fetch_and_add(&t->count, -(__s64)a->count);
	}
	bpf_map_delete_elem(&allocs, &addr);
	counter_inc(&counters, MEMLEAK_FREES);
}

/* A tracked allocation now lives at addr. An address already tracked was
 * freed by a path not traced (the allocator's internal free): it leaves
 * its stack's total before the new one joins. */
static __always_inline void remember(__u64 addr, struct memleak_alloc *a)
{
	forget(addr, false);
	if (bpf_map_update_elem(&allocs, &addr, a, BPF_ANY)) {
		counter_inc(&counters, MEMLEAK_MAP_FULL);
		return;
	}
	struct memleak_total zero = {};
	if (!lookup_or_init(&totals, &a->where, &zero)) {
		bpf_map_delete_elem(&allocs, &addr);
		counter_inc(&counters, MEMLEAK_MAP_FULL);
		return;
	}
	total_add(&a->where, a->bytes, a->count);
}

/* A global function is verified once, on its own. Inlined after the
 * switch below, the walk was verified again for every path into it and
 * went past the verifier's million instructions. */
__noinline __u64 memleak_user_stack(void)
{
	return unwind_user_stack();
}

/* free(ptr) and munmap(addr, len), at their entry (nothing to learn from
 * the return). A free inside an allocator call is the allocator's own. */
static __always_inline void free_entry(void *ctx, __u32 tid, __u32 fn)
{
	if (bpf_map_lookup_elem(&inflight, &tid))
		return;
	/* munmap of an address never tracked is usual (thread stacks,
	 * files): only free() counts as missed. */
	forget(reg_arg(ctx, 0), fn == FN_FREE);
}

/* Every entry point, told apart by the attach cookie: one program serves
 * them all, so one uprobe_multi link holds every entry (a link per
 * function took the kernel 80-95 ms each to remove at exit). */
static __always_inline int alloc_entry(void *ctx)
{
	__u64 id;
	if (!current_traced(&id))
		return 0;
	__u32 tid = (__u32)id;
	__u32 fn = bpf_get_attach_cookie(ctx);
	if (fn == FN_FREE || fn == FN_MUNMAP) {
		free_entry(ctx, tid, fn);
		return 0;
	}
	struct inflight *open = bpf_map_lookup_elem(&inflight, &tid);
	if (open) {
		/* calloc calling malloc, malloc calling mmap: the outer call
		 * is the one the program made. */
		open->depth++;
		return 0;
	}
	struct inflight f = {.depth = 1};
	switch (fn) {
	case FN_MALLOC:
	case FN_VALLOC:
	case FN_PVALLOC:
		f.size = reg_arg(ctx, 0);
		break;
	case FN_CALLOC:
		f.size = reg_arg(ctx, 0) * reg_arg(ctx, 1);
		break;
	case FN_REALLOC:
		forget(reg_arg(ctx, 0), false); /* moved or resized: tracked anew at the return */
		f.size = reg_arg(ctx, 1);
		break;
	case FN_REALLOCARRAY:
		forget(reg_arg(ctx, 0), false);
		f.size = reg_arg(ctx, 1) * reg_arg(ctx, 2);
		break;
	case FN_POSIX_MEMALIGN:
		f.memptr = reg_arg(ctx, 0);
		f.size = reg_arg(ctx, 2);
		break;
	case FN_ALIGNED_ALLOC:
	case FN_MEMALIGN:
	case FN_MMAP:
		f.size = reg_arg(ctx, 1);
		break;
	}
	counter_inc(&counters, MEMLEAK_CALLS);
	if (sample(f.size, &f.bytes, &f.count) && user_stacks) {
		/* The walk starts at the allocator's first instruction, where
		 * the return address is still on the stack: every frame exact. */
		f.ustack = memleak_user_stack();
		if (!f.ustack)
			counter_inc(&counters, MEMLEAK_STACK_FAIL);
	}
	bpf_map_update_elem(&inflight, &tid, &f, BPF_ANY);
	return 0;
}

/* The return of an allocating function (the cookie says which). */
static __always_inline int alloc_return(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct inflight *f = bpf_map_lookup_elem(&inflight, &tid);
	if (!f)
		return 0;
	if (--f->depth > 0)
		return 0;
	__u64 addr = reg_ret(ctx);
	__u32 fn = bpf_get_attach_cookie(ctx);
	if (fn == FN_POSIX_MEMALIGN) {
		if (addr != 0 || bpf_probe_read_user(&addr, sizeof(addr), (void *)f->memptr))
			addr = 0; /* failed: nothing allocated */
	}
	if (fn == FN_MMAP && addr == ~0ULL)
		addr = 0; /* MAP_FAILED */
	if (addr && f->bytes) {
		struct memleak_alloc a = {.bytes = f->bytes, .count = f->count, .size = f->size, .ts = bpf_ktime_get_ns()};
		a.where.user_stack = f->ustack;
		a.where.kernel_stack = STACK_NONE;
		a.where.pid = id >> 32;
		counter_inc(&counters, MEMLEAK_SAMPLED);
		remember(addr, &a);
	}
	bpf_map_delete_elem(&inflight, &tid);
	return 0;
}

/* Each as a uprobe.multi program (one link for every function) and a
 * plain uprobe one (a link each, kernels before 6.6); the loader keeps one. */
UPROBE_OR_MULTI("uprobe", alloc_entry, alloc_entry(ctx))
UPROBE_OR_MULTI("uretprobe", alloc_return, alloc_return(ctx))

/* Kernel mode: the kmem tracepoints' records, by CO-RE (their layouts
 * moved between kernels). */
struct trace_event_raw_kmalloc {
	const void *ptr;
	__u64 bytes_alloc;
} __attribute__((preserve_access_index));

struct trace_event_raw_kmem_cache_alloc {
	const void *ptr;
	__u64 bytes_alloc;
} __attribute__((preserve_access_index));

struct trace_event_raw_kfree {
	const void *ptr;
} __attribute__((preserve_access_index));

struct trace_event_raw_kmem_cache_free {
	const void *ptr;
} __attribute__((preserve_access_index));

struct trace_event_raw_mm_page_alloc {
	unsigned long pfn;
	unsigned int order;
} __attribute__((preserve_access_index));

struct trace_event_raw_mm_page_free {
	unsigned long pfn;
	unsigned int order;
} __attribute__((preserve_access_index));

struct trace_event_raw_mm_page_free_batched {
	unsigned long pfn;
} __attribute__((preserve_access_index));

static __always_inline int kalloc(void *ctx, __u64 addr, __u64 size)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (!addr || !pid_traced(id >> 32) || !task_cgroup_traced((void *)bpf_get_current_task()))
		return 0;
	counter_inc(&counters, MEMLEAK_CALLS);
	struct memleak_alloc a = {.size = size};
	if (!sample(size, &a.bytes, &a.count))
		return 0;
	a.ts = bpf_ktime_get_ns();
	a.where.pid = id >> 32;
	a.where.kernel_stack = bpf_get_stackid(ctx, &stacks, 0);
	if (a.where.kernel_stack < 0)
		counter_inc(&counters, MEMLEAK_STACK_FAIL);
	counter_inc(&counters, MEMLEAK_SAMPLED);
	remember(addr, &a);
	return 0;
}

SEC("tracepoint/kmem/kmalloc")
int kmalloc(struct trace_event_raw_kmalloc *ctx)
{
	return kalloc(ctx, (__u64)ctx->ptr, ctx->bytes_alloc);
}

SEC("tracepoint/kmem/kmem_cache_alloc")
int kmem_cache_alloc(struct trace_event_raw_kmem_cache_alloc *ctx)
{
	return kalloc(ctx, (__u64)ctx->ptr, ctx->bytes_alloc);
}

/* Pages are keyed by frame number, which no kernel pointer equals. */
SEC("tracepoint/kmem/mm_page_alloc")
int mm_page_alloc(struct trace_event_raw_mm_page_alloc *ctx)
{
	return kalloc(ctx, ctx->pfn, page_size << (ctx->order & 31));
}

SEC("tracepoint/kmem/kfree")
int kfree(struct trace_event_raw_kfree *ctx)
{
	forget((__u64)ctx->ptr, false);
	return 0;
}

SEC("tracepoint/kmem/kmem_cache_free")
int kmem_cache_free(struct trace_event_raw_kmem_cache_free *ctx)
{
	forget((__u64)ctx->ptr, false);
	return 0;
}

SEC("tracepoint/kmem/mm_page_free")
int mm_page_free(struct trace_event_raw_mm_page_free *ctx)
{
	forget(ctx->pfn, false);
	return 0;
}

SEC("tracepoint/kmem/mm_page_free_batched")
int mm_page_free_batched(struct trace_event_raw_mm_page_free_batched *ctx)
{
	forget(ctx->pfn, false);
	return 0;
}
