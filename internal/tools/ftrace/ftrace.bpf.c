//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* ftrace: function-graph tracing of user programs. A uprobe at each
 * traced function's entry pushes (function, time, arguments) on the
 * thread's shadow stack; the return probe pops it and, when the call
 * passes the depth and minimum-duration filters, sends one completed call
 * to user space. Filtering at the return is what makes -t possible in the
 * kernel (a call's duration is known only then) and halves the ring
 * traffic; user space rebuilds the nesting from start times and depths.
 * The function index comes from the attach cookie. Each program exists as
 * a uprobe.multi one (one link for every function) and a plain uprobe one
 * (one link each, for kernels before 6.6); the loader keeps only one. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
/* The skeleton's gate (sonde_target.h) holds entries back until every
 * probe is in, and again once they start coming out: a call entered then
 * would see some functions probed and others not, and make callers
 * without their callees. Returns still pop what was pushed. */
#define SONDE_GATED
#include "sonde_target.h"
#include "sonde_regs.h"
#include "sonde_tp.h"
#include "ftrace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

KEEP_TYPE(struct ftrace_event, ftrace_event);

const volatile __u32 max_depth = 0;   /* 0: no limit; else calls at depth >= max_depth are not sent */
const volatile __u64 min_duration = 0; /* ns; shorter calls are not sent */

/* key: thread id, or goroutine (g) for Go; value: its calls in progress.
 * Preallocated: the entry probe must not fail on allocation. */
HASH_MAP(shadows, __u64, struct ftrace_shadow, 1024);

/* key: 0; value: a zeroed shadow stack to insert (too big for the BPF stack). */
PERCPU_ARRAY(zero, struct ftrace_shadow, 1);

/* key: function index (the cookie); value: what to capture. Sized by the
 * loader to the number of functions. */
SONDE_MAP(fncfg, BPF_MAP_TYPE_ARRAY, __u32, struct ftrace_fncfg, 1);

/* Completed calls (struct ftrace_event), 16 MiB. */
RINGBUF(events, 16 << 20);

/* key: enum ftrace_counter; value: count (u64), per CPU. */
ENUM_COUNTERS(counters, enum ftrace_counter, FTRACE_NCOUNTERS);

/* Go restarts a function whose goroutine stack had to grow at its entry:
 * it grows the stack (copying it elsewhere) and jumps to the function's
 * first instruction again, so the entry probe fires twice for one call.
 * The second entry is recognised as: the next event after the entry of
 * the same function, with the same return address, on a stack pointer
 * that is not just below the first (a nested call always is: the stack
 * grows down, by one frame). Then the frame is kept, not pushed again. */
static __always_inline bool go_restart(struct ftrace_shadow *s, __u32 fn, __u64 sp, __u64 ret)
{
	__u32 d = s->depth;
	if (!s->entered || d == 0 || d > FTRACE_STACK)
		return false;
	struct ftrace_frame *top = &s->frames[(d - 1) & (FTRACE_STACK - 1)];
	if (top->fn != fn || top->ret != ret)
		return false;
	if (sp < top->sp && top->sp - sp < (1 << 20))
		return false;
	top->sp = sp;
	return true;
}

static __always_inline int enter(void *ctx, __u64 key, __u32 pid, __u32 tid, bool go)
{
	if (!SONDE_GATE_OPEN)
		return 0;
	struct ftrace_shadow *s = bpf_map_lookup_elem(&shadows, &key);
	if (!s) {
		__u32 z = 0;
		struct ftrace_shadow *init = bpf_map_lookup_elem(&zero, &z);
		if (!init)
			return 0;
		s = lookup_or_init(&shadows, &key, init);
		if (!s) {
			counter_inc(&counters, FTRACE_C_NOSTACK);
			return 0;
		}
		bpf_get_current_comm(s->comm, sizeof(s->comm));
	}
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx);
	__u64 sp = 0, ret = 0;
	if (go) {
		sp = reg_sp(ctx);
		bpf_probe_read_user(&ret, sizeof(ret), (void *)sp);
		if (go_restart(s, fn, sp, ret))
			return 0;
	}
	__u32 d = s->depth;
	s->depth = d + 1;
	s->pid = pid;
	s->tid = tid;
	s->entered = 1;
	if (d >= FTRACE_STACK) {
		counter_inc(&counters, FTRACE_C_OVERFLOW);
		return 0;
	}
	struct ftrace_frame *f = &s->frames[d & (FTRACE_STACK - 1)];
	f->sp = sp;
	f->ret = ret;
	f->fn = fn;
	f->nargs = 0;
	struct ftrace_fncfg *c = bpf_map_lookup_elem(&fncfg, &fn);
	if (c && c->nargs) {
		__u8 n = c->nargs > FTRACE_ARGS ? FTRACE_ARGS : c->nargs;
		for (int i = 0; i < FTRACE_ARGS; i++) {
			if (i >= n)
				break;
			f->args[i] = reg_arg(ctx, i);
		}
		f->nargs = n;
	}
	/* Last, so the probe's own work is not in the call's time. */
	f->start_ns = bpf_ktime_get_ns();
	return 0;
}

static __always_inline int leave(void *ctx, __u64 key, __u32 pid, __u32 tid)
{
	__u64 now = bpf_ktime_get_ns();
	struct ftrace_shadow *s = bpf_map_lookup_elem(&shadows, &key);
	if (!s || s->depth == 0) {
		counter_inc(&counters, FTRACE_C_UNMATCHED);
		return 0;
	}
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx);
	s->entered = 0;
	__u32 d = s->depth - 1;
	if (d >= FTRACE_STACK) {
		s->depth = d;
		return 0;
	}
	/* The top frame should be this function. If not, returns were missed
	 * (longjmp, an exception, a Go panic) or this call began before the
	 * attach: look a few frames down, else leave the stack as it is. */
	int found = -1;
	for (int i = 0; i < 4; i++) {
		if (i > d)
			break;
		if (s->frames[(d - i) & (FTRACE_STACK - 1)].fn == fn) {
			found = i;
			break;
		}
	}
	if (found < 0) {
		counter_inc(&counters, FTRACE_C_UNMATCHED);
		return 0;
	}
	d -= found;
	s->depth = d;
	struct ftrace_frame *f = &s->frames[d & (FTRACE_STACK - 1)];
	__u64 dur = now - f->start_ns;
	if ((max_depth && d >= max_depth) || dur < min_duration) {
		counter_inc(&counters, FTRACE_C_FILTERED);
		return 0;
	}
	struct ftrace_event *e = ring_reserve(&events, sizeof(*e), &counters, FTRACE_C_LOST);
	if (!e)
		return 0;
	e->start_ns = f->start_ns;
	e->duration_ns = dur;
	e->key = key;
	e->pid = pid;
	e->tid = tid;
	e->fn = fn;
	e->depth = d;
	e->nargs = f->nargs;
	for (int i = 0; i < FTRACE_ARGS; i++)
		e->args[i] = f->args[i];
	e->flags = 0;
	e->retval = 0;
	struct ftrace_fncfg *c = bpf_map_lookup_elem(&fncfg, &fn);
	if (c && c->want_ret) {
		e->retval = reg_ret(ctx);
		e->flags = FTRACE_HAS_RET;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* C and other native code: depth per thread. */
static __always_inline int native(void *ctx, bool ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32;
	if (!pid_traced(pid))
		return 0;
	if (ret)
		return leave(ctx, (__u32)id, pid, (__u32)id);
	return enter(ctx, (__u32)id, pid, (__u32)id, false);
}

/* Go: no uretprobes (they rewrite the return address, which Go's stack
 * walks reject), so the return probes sit on each return instruction;
 * depth is per goroutine, which may change threads mid-call. */
static __always_inline int golang(void *ctx, bool ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32;
	__u64 g;
	if (!pid_traced(pid) || !reg_goroutine(ctx, &g))
		return 0;
	if (ret)
		return leave(ctx, g, pid, (__u32)id);
	return enter(ctx, g, pid, (__u32)id, true);
}

UPROBE_OR_MULTI("uprobe", entry, native(ctx, false))
UPROBE_OR_MULTI("uretprobe", return, native(ctx, true))
UPROBE_OR_MULTI("uprobe", go_entry, golang(ctx, false))
UPROBE_OR_MULTI("uprobe", go_return, golang(ctx, true))
