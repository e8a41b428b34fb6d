//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* why: where each thread's wall-clock time goes, and who ended each of its
 * waits. A state machine per thread on sched_switch, sched_waking and
 * sched_wakeup_new puts every nanosecond between the start and the stop in
 * one of on CPU, runnable, throttled (runnable while its cgroup is out of
 * quota) or blocked. A block is keyed by the blocked thread's stacks and
 * syscall, its waker's stacks, and the waker's own last block, so user
 * space can follow a wait from waker to waker to its root. Wakers of the
 * target's threads are followed too (to max_depth hops). All of it is
 * aggregated in the kernel; user space reads the maps once, at the end. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "sonde_cgroup.h"
#define SONDE_UNWIND
#include "sonde_stack.h"
#include "sonde_task.h"
#include "sonde_tp.h"
#include "why.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

KEEP_TYPE(struct why_thread, why_thread);
KEEP_TYPE(enum why_state, why_state);
KEEP_TYPE(enum why_ctl, why_ctl);

const volatile __u32 target_pid = 0; /* 0: every process */
const volatile __u32 target_tid = 0; /* 0: every thread of target_pid; else only this one (-t) */
const volatile __u32 max_depth = 4;  /* follow wakers this many hops from a target thread */
const volatile bool user_stacks = true;

/* key: tid (u32); value: struct why_thread, its accounts and states. */
HASH_MAP(threads, __u32, struct why_thread, 32768);

/* key: struct why_key; value: struct why_wait (ns blocked, count, a log2
 * histogram in µs). Keys follow stacks met: allocated on insert. */
SONDE_MAP_FLAGS(waits, BPF_MAP_TYPE_HASH, struct why_key, struct why_wait, 65536, BPF_F_NO_PREALLOC);

/* key: struct sonde_stack_key (a slice on the CPU, by the stacks it ended
 * at: sampled at each switch-out); value: ns on CPU in such slices (u64). */
SONDE_MAP_FLAGS(cpu, BPF_MAP_TYPE_HASH, struct sonde_stack_key, __u64, 65536, BPF_F_NO_PREALLOC);

/* key: enum why_ctl; value: CLOCK_MONOTONIC ns written by user space. */
SONDE_MAP(ctl, BPF_MAP_TYPE_ARRAY, __u32, __u64, WHY_CTL_MAX);

/* Kernel stacks (see sonde_stack.h); user stacks go to unwind_stacks. */
STACK_MAP(stacks, 16384);

/* key: 0; value: a why_thread being built (too big for the BPF stack beside a walk). */
PERCPU_ARRAY(scratch, struct why_thread, 1);

/* key: enum why_error; value: count (u64), per CPU. */
ENUM_COUNTERS(errors, enum why_error, WHY_ERR_MAX);

static const struct why_wait zero_wait;

/* The group-scheduling fields read to tell throttling from run-queue
 * waits; absent without CONFIG_CFS_BANDWIDTH (then nothing is throttled). */
struct cfs_rq___why {
	int throttled;
	int throttle_count;
} __attribute__((preserve_access_index));
struct sched_entity___why {
	struct cfs_rq___why *cfs_rq;
} __attribute__((preserve_access_index));
struct task_struct___why {
	struct sched_entity___why se;
} __attribute__((preserve_access_index));

static __always_inline __u32 cfs_throttled(struct task_struct *t)
{
	struct task_struct___why *tw = (void *)t;
	if (!bpf_core_field_exists(tw->se.cfs_rq))
		return 0;
	struct cfs_rq___why *rq = BPF_CORE_READ(tw, se.cfs_rq);
	if (!rq || !bpf_core_field_exists(rq->throttle_count))
		return 0;
	return BPF_CORE_READ(rq, throttled) || BPF_CORE_READ(rq, throttle_count);
}

static __always_inline __u64 ctl_get(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&ctl, &which);
	return v ? *v : 0;
}

/* Whether now is inside the measured window. */
static __always_inline bool in_window(__u64 now)
{
	__u64 start = ctl_get(WHY_CTL_START), stop = ctl_get(WHY_CTL_STOP);
	return start && now >= start && (!stop || now < stop);
}

/* task: the thread's task_struct, for the cgroup filter (-G). */
static __always_inline bool is_target(__u32 pid, __u32 tid, void *task)
{
	return tid && (!target_pid || pid == target_pid) && (!target_tid || tid == target_tid) && task_cgroup_traced(task);
}

/* Start following tid from begin in state (counted when the table is full). */
static __always_inline void follow(__u32 tid, __u32 pid, __u64 begin, __u32 state, __u32 depth, struct task_struct *t, const bool btf)
{
	__u32 zero = 0;
	struct why_thread *n = bpf_map_lookup_elem(&scratch, &zero);
	if (!n)
		return;
	__builtin_memset(n, 0, sizeof(*n));
	n->begin = begin;
	n->ts = begin;
	n->pid = pid;
	n->state = state;
	n->depth = depth;
	n->syscall = WHY_NO_SYSCALL;
	n->block_kstack = STACK_NONE;
	n->last_kstack = STACK_NONE;
	n->last_syscall = WHY_NO_SYSCALL;
	if (t) {
		if (btf)
			__builtin_memcpy(n->comm, t->comm, sizeof(n->comm));
		else
			BPF_CORE_READ_STR_INTO(&n->comm, t, comm);
	} else {
		bpf_get_current_comm(&n->comm, sizeof(n->comm));
	}
	if (bpf_map_update_elem(&threads, &tid, n, BPF_NOEXIST) && !bpf_map_lookup_elem(&threads, &tid))
		counter_inc(&errors, WHY_ERR_THREADS);
}

/* The thread's entry; a target thread met for the first time gets one
 * that began at the start, its state until now to be settled. */
static __always_inline struct why_thread *thread_of(__u32 tid, __u32 pid, struct task_struct *t, const bool btf)
{
	struct why_thread *th = bpf_map_lookup_elem(&threads, &tid);
	if (th || !is_target(pid, tid, t))
		return th;
	follow(tid, pid, ctl_get(WHY_CTL_START), WHY_UNSEEN, 0, t, btf);
	/* Looked up again, so every way here leaves the same state for the
	 * verifier (the stack walk after it is verified once, not per way). */
	return bpf_map_lookup_elem(&threads, &tid);
}

/* floor(log2(v)) without a branch: (x + 2^k - 1) >> k is 1 for any
 * 0 < x < 2^k and 0 for x = 0. log2_u64's six branches, after the stack
 * walk's many ways out, made the verifier walk this 64 times per way. */
static __always_inline __u32 log2_flat(__u64 v)
{
	__u64 r = 0;
	/* Steps of k = 32, 16, 8, 4, 2 and 1 bits: s is k when v has a bit
	 * at position k or above (v then drops k bits), else 0; r sums the
	 * steps. Unrolled: the program keeps no loop. */
#pragma unroll
	for (int i = 5; i >= 0; i--) {
		__u32 k = 1u << i;
		__u64 s = (((v >> k) + ((1ULL << k) - 1)) >> k) << i;
		v >>= s;
		r |= s;
	}
	return (__u32)r;
}

static __always_inline void add_wait(struct why_key *k, __u64 d, __u64 ran, __u64 last_ns)
{
	struct why_wait *w = lookup_or_init(&waits, k, &zero_wait);
	if (!w) {
		counter_inc(&errors, WHY_ERR_FULL);
		return;
	}
	__sync_fetch_and_add(&w->ns, d);
	__sync_fetch_and_add(&w->count, 1);
	__sync_fetch_and_add(&w->waker_ran_ns, ran);
	__sync_fetch_and_add(&w->waker_last_ns, last_ns);
	__u32 slot = log2_flat(d / 1000);
	if (slot >= WHY_SLOTS)
		slot = WHY_SLOTS - 1;
	__sync_fetch_and_add(&w->slots[slot], 1);
}

/* The blocked thread's key, without a waker. */
static __always_inline void block_key(struct why_key *k, __u32 tid, struct why_thread *th)
{
	__builtin_memset(k, 0, sizeof(*k));
	k->pid = th->pid;
	k->tid = tid;
	k->user_stack = th->block_ustack;
	k->kernel_stack = th->block_kstack;
	k->syscall = th->block_syscall;
	k->waker_kernel_stack = STACK_NONE;
	k->waker_last_kernel_stack = STACK_NONE;
	k->waker_last_syscall = WHY_NO_SYSCALL;
	__builtin_memcpy(k->comm, th->comm, sizeof(k->comm));
}

/* A block ends: its time goes to the thread and to its bucket. */
static __always_inline void end_block(struct why_thread *th, __u64 now, __u32 waker)
{
	__u64 d = now - th->ts;
	th->blocked_ns += d;
	th->last_ustack = th->block_ustack;
	th->last_kstack = th->block_kstack;
	th->last_syscall = th->block_syscall;
	th->last_waker = waker;
	th->last_ns = d;
	th->last_end = now;
	th->ts = now;
}

/* A switch-out being accounted: settled before the stack walk, in map
 * memory, as a wake is (see struct wake). */
struct out {
	struct sonde_stack_key ck; /* the leaving thread, and its stacks once walked */
	__u64 slice;           /* ns it was on the CPU */
	__u32 cpu;             /* add the slice to cpu (a target thread) */
	__u32 block;           /* it blocked: the stacks are its block's */
};

/* key: 0; value: the switch-out being accounted on this CPU. */
PERCPU_ARRAY(outs, struct out, 1);

/* Time off the CPU whose switches were not seen (d ns): runnable when it
 * was last seen runnable, else blocked, for no reason seen. */
static __always_inline void off_cpu_unseen(struct why_thread *th, __u32 tid, __u64 d)
{
	if (!d)
		return;
	if (th->state == WHY_RUNQ) {
		if (th->throttled)
			th->throttled_ns += d;
		else
			th->runq_ns += d;
		return;
	}
	if (th->state != WHY_BLOCKED) {
		th->block_ustack = 0;
		th->block_kstack = STACK_NONE;
		th->block_syscall = WHY_NO_SYSCALL;
	}
	struct why_key k;
	block_key(&k, tid, th);
	add_wait(&k, d, 0, 0);
	th->blocked_ns += d;
}

/* settle_out accounts the leaving thread's slice and new state; true when
 * its stacks are wanted (a target's slice, or a block). Not inlined, for
 * the verifier (see settle_wake). */
static __noinline bool settle_out(bool preempt, struct task_struct *prev, __u64 now, const bool btf)
{
	__u32 zero = 0;
	__u32 ptid = TASK_FIELD(btf, prev, pid), ppid = TASK_FIELD(btf, prev, tgid);
	struct why_thread *th = thread_of(ptid, ppid, prev, btf);
	struct out *o = bpf_map_lookup_elem(&outs, &zero);
	if (!th || !o || th->state == WHY_DEAD)
		return false;
	__u64 slice = now - th->ts;
	__u64 run = slice;
	__u64 sum = TASK_FIELD(btf, prev, se.sum_exec_runtime);
	if (th->state != WHY_ON && th->state != WHY_UNSEEN) {
		/* Its switch-in was not seen: of the slice, the runtime counter
		 * says what ran since its last switch-out; the rest stays in
		 * the state it was in. */
		counter_inc(&errors, WHY_ERR_UNSEEN);
		__u64 ran = th->exec_out && sum > th->exec_out ? sum - th->exec_out : slice;
		if (ran > slice)
			ran = slice;
		off_cpu_unseen(th, ptid, slice - ran);
		slice = ran;
		run = ran;
	} else if (th->state == WHY_ON && th->exec_base) {
		run = sum > th->exec_base ? sum - th->exec_base : 0;
	}
	th->exec_out = sum;
	if (run > slice) {
		/* The kernel's clock for the slice starts as it picks the
		 * task, before this program's switch-in (and the switch-out
		 * program of the task leaving) ran: that part was counted as
		 * runnable here; it moves to on CPU. */
		__u64 more = run - slice;
		if (more > th->last_runq)
			more = th->last_runq;
		if (th->last_runq_throttled)
			th->throttled_ns -= more;
		else
			th->runq_ns -= more;
		th->on_cpu_ns += slice + more;
	} else {
		th->on_cpu_ns += run;
		th->irq_ns += slice - run;
	}
	th->last_runq = 0;
	th->exec_base = 0;
	th->ts = now;
	/* Parts of a long slice were charged to the stacks it ran
	 * (on_runtime): the switch-out's stacks get the rest. */
	slice = slice > th->tick_charged ? slice - th->tick_charged : 0;
	th->tick_charged = 0;
	th->tick_pend = 0;
	long st = task_state_btf(prev, btf);
	bool dead = st & 0x80; /* TASK_DEAD: its last switch */
	bool runnable = !dead && (preempt || st == 0);
	o->ck.pid = ppid;
	o->ck.tid = ptid;
	o->ck.user_stack = 0;
	o->ck.kernel_stack = STACK_NONE;
	o->slice = slice;
	o->cpu = th->depth == 0;
	o->block = 0;
	if (dead) {
		th->state = WHY_DEAD;
		th->end = now;
	} else if (runnable) {
		th->state = WHY_RUNQ;
		th->throttled = cfs_throttled(prev);
	} else {
		th->state = WHY_BLOCKED;
		th->block_ustack = 0;
		th->block_kstack = STACK_NONE;
		th->block_syscall = th->syscall;
		o->block = 1;
	}
	return o->cpu || o->block;
}

static __always_inline void switch_out(void *ctx, __u64 now, bool preempt, struct task_struct *prev, const bool btf)
{
	__u32 zero = 0;
	if (!settle_out(preempt, prev, now, btf))
		return;
	struct out *o = bpf_map_lookup_elem(&outs, &zero);
	if (!o)
		return;
	if (take_stacks_unwind(ctx, &stacks, user_stacks, true, &o->ck.user_stack, &o->ck.kernel_stack))
		counter_inc(&errors, WHY_ERR_STACK);
	if (o->cpu && o->slice && !map_add(&cpu, &o->ck, o->slice))
		counter_inc(&errors, WHY_ERR_FULL);
	if (o->block) {
		struct why_thread *th = bpf_map_lookup_elem(&threads, &o->ck.tid);
		if (th) {
			th->block_ustack = o->ck.user_stack;
			th->block_kstack = o->ck.kernel_stack;
		}
	}
}

static __always_inline void switch_in(__u64 now, struct task_struct *next, const bool btf)
{
	__u32 ntid = TASK_FIELD(btf, next, pid), npid = TASK_FIELD(btf, next, tgid);
	struct why_thread *th = thread_of(ntid, npid, next, btf);
	if (!th || th->state == WHY_DEAD)
		return;
	__u64 d = now - th->ts;
	if (th->state == WHY_BLOCKED) {
		/* Running again without a wakeup seen (woken as the stop came,
		 * or the waking was missed): blocked, waker unknown. */
		struct why_key k;
		block_key(&k, ntid, th);
		add_wait(&k, d, 0, 0);
		end_block(th, now, 0);
	} else if (th->state == WHY_ON) {
		/* A switch-out not seen: of the gap, the runtime counter says
		 * what ran since the last switch-in; the rest was off the CPU,
		 * why not seen. */
		__u64 sum = TASK_FIELD(btf, next, se.sum_exec_runtime);
		__u64 ran = th->exec_base && sum > th->exec_base ? sum - th->exec_base : d;
		if (ran > d)
			ran = d;
		th->on_cpu_ns += ran;
		th->exec_out = sum;
		off_cpu_unseen(th, ntid, d - ran);
	} else if (th->throttled) {
		th->throttled_ns += d; /* WHY_RUNQ, or WHY_UNSEEN: runnable since the start */
		th->last_runq = d;
		th->last_runq_throttled = 1;
	} else {
		th->runq_ns += d;
		th->last_runq = d;
		th->last_runq_throttled = 0;
	}
	th->state = WHY_ON;
	th->ts = now;
	th->exec_base = TASK_FIELD(btf, next, se.sum_exec_runtime);
	th->tick_pend = 0;
	th->tick_charged = 0;
}

/* sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next, ...):
 * two programs, one per task. In one program the verifier walks the
 * arriving task's branches once per way out of the leaving task's stack
 * walk, and gave up at a million instructions. prev and next are two
 * tasks, so the order the programs run in does not matter. */
TP_BTF_OR_RAW(sched_switch, sched_switch_out)
{
	__u64 now = bpf_ktime_get_ns();
	if (!in_window(now))
		return 0;
	/* ctx is prev's context: the stack walks see prev's stacks. */
	switch_out(ctx, now, ctx[0], (struct task_struct *)ctx[1], btf);
	return 0;
}

TP_BTF_OR_RAW(sched_switch, sched_switch_in)
{
	__u64 now = bpf_ktime_get_ns();
	if (!in_window(now))
		return 0;
	switch_in(now, (struct task_struct *)ctx[2], btf);
	return 0;
}

/* A wake being accounted: everything but the waker's stacks is settled
 * here before the stack walk, in map memory, whose values the verifier
 * does not track: the walk then starts from one state however the thread
 * and its waker were found, and the verifier walks it once (with the
 * settling in registers it gave up at a million instructions). */
struct wake {
	struct why_key key;
	__u64 d;       /* blocked ns */
	__u64 ran;     /* the waker's time awake since its last block */
	__u64 last_ns; /* that block's length */
};

/* key: 0; value: the wake being accounted on this CPU. */
PERCPU_ARRAY(wakes, struct wake, 1);

/* settle_wake fills the wake's entry; false when there is nothing to
 * account. A function of its own (not inlined): its many ways out all
 * return to one caller state, so the stack walk's loop after it is
 * verified once instead of once per way. */
static __noinline bool settle_wake(struct task_struct *p, __u64 now, const bool btf)
{
	__u32 zero = 0;
	__u32 tid = TASK_FIELD(btf, p, pid), pid = TASK_FIELD(btf, p, tgid);
	struct why_thread *th = thread_of(tid, pid, p, btf);
	struct wake *wk = bpf_map_lookup_elem(&wakes, &zero);
	if (!th || !wk)
		return false;
	if (th->state == WHY_UNSEEN) {
		/* Blocked since before the start: where is read from /proc. */
		th->state = WHY_BLOCKED;
		th->block_ustack = 0;
		th->block_kstack = STACK_NONE;
		th->block_syscall = WHY_BEFORE;
	}
	if (th->state != WHY_BLOCKED)
		return false;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 wtid = (__u32)id;
	block_key(&wk->key, tid, th);
	wk->key.waker_pid = id >> 32;
	wk->key.waker_tid = wtid;
	bpf_get_current_comm(&wk->key.waker_comm, sizeof(wk->key.waker_comm));
	wk->d = now - th->ts;
	wk->ran = 0;
	wk->last_ns = 0;
	__u32 depth = th->depth;
	end_block(th, now, wtid);
	th->state = WHY_RUNQ;
	th->throttled = 0;
	th->exec_out = TASK_FIELD(btf, p, se.sum_exec_runtime); /* for came_in_unseen */
	struct why_thread *w = wtid ? bpf_map_lookup_elem(&threads, &wtid) : 0;
	if (w) {
		if (w->last_end) {
			wk->key.waker_last_user_stack = w->last_ustack;
			wk->key.waker_last_kernel_stack = w->last_kstack;
			wk->key.waker_last_syscall = w->last_syscall;
			wk->key.waker_last_waker = w->last_waker;
			wk->ran = now - w->last_end;
			wk->last_ns = w->last_ns;
		}
	} else if (is_target(id >> 32, wtid, (void *)bpf_get_current_task())) {
		/* A target thread met first as a waker: its time since the
		 * start is settled by its next event, like any other's. */
		follow(wtid, id >> 32, ctl_get(WHY_CTL_START), WHY_UNSEEN, 0, 0, btf);
	} else if (wtid && depth < max_depth) {
		/* Follow the waker from now on: it is on this CPU. */
		follow(wtid, id >> 32, now, WHY_ON, depth + 1, 0, btf);
	}
	return true;
}

static __always_inline int on_waking(void *ctx, struct task_struct *p, const bool btf)
{
	__u64 now = bpf_ktime_get_ns();
	if (!in_window(now) || !settle_wake(p, now, btf))
		return 0;
	__u32 zero = 0;
	struct wake *wk = bpf_map_lookup_elem(&wakes, &zero);
	if (!wk)
		return 0;
	if (take_stacks_unwind(ctx, &stacks, user_stacks, true, &wk->key.waker_user_stack, &wk->key.waker_kernel_stack))
		counter_inc(&errors, WHY_ERR_STACK);
	/* The kernel queues the thread once this program returns: the walk
	 * just done is still part of its block, as schedstat counts it. */
	__u64 later = bpf_ktime_get_ns();
	struct why_thread *th = bpf_map_lookup_elem(&threads, &wk->key.tid);
	if (th && th->state == WHY_RUNQ && th->ts == now && later > now) {
		wk->d += later - now;
		th->blocked_ns += later - now;
		th->last_ns += later - now;
		th->last_end = later;
		th->ts = later;
	}
	add_wait(&wk->key, wk->d, wk->ran, wk->last_ns);
	return 0;
}

/* sched_waking(struct task_struct *p) */
TP_BTF_OR_RAW(sched_waking, sched_waking)
{
	return on_waking(ctx, (struct task_struct *)ctx[0], btf);
}

/* sched_wakeup_new(struct task_struct *p): a new target thread begins, runnable. */
TP_BTF_OR_RAW(sched_wakeup_new, sched_wakeup_new)
{
	struct task_struct *p = (struct task_struct *)ctx[0];
	__u64 now = bpf_ktime_get_ns();
	if (!in_window(now))
		return 0;
	__u32 tid = TASK_FIELD(btf, p, pid), pid = TASK_FIELD(btf, p, tgid);
	if (is_target(pid, tid, p) && !bpf_map_lookup_elem(&threads, &tid))
		follow(tid, pid, now, WHY_RUNQ, 0, p, btf);
	return 0;
}

/* Runtime (ns) a target thread runs within one slice before its stacks
 * are sampled again. Stacks taken only where slices end sample a thread
 * that shares its CPU every few ms; one alone on a CPU runs slices of
 * seconds, each one stack (a 3:1 split of two functions came out 47:53). */
#define WHY_TICK_NS 10000000ULL

/* key: 0; value: the stacks being sampled on this CPU (on_runtime). */
PERCPU_ARRAY(ticks, struct sonde_stack_key, 1);

/* A thread runs while its state says runnable: its switch-in was never
 * handed to the program (on this VM the switches out of the hypervisor
 * agent's threads are never traced, by BPF or ftrace, so the task that
 * comes back in after one arrives unseen). Of the time since it went
 * runnable, the runtime counter says what it ran; it is on CPU from now.
 * Found at the thread's next scheduler tick: without it, a thread that
 * never switched out again was counted runnable to the stop (376 ms of a
 * CPU hog's 3 s in one run). */
static __always_inline void came_in_unseen(struct why_thread *th, struct task_struct *t, const bool btf)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 sum = TASK_FIELD(btf, t, se.sum_exec_runtime);
	__u64 d = now > th->ts ? now - th->ts : 0;
	/* exec_out is its runtime as it went runnable: at its switch-out, at
	 * its wake, or 0 for a new task. */
	__u64 ran = sum > th->exec_out ? sum - th->exec_out : 0;
	if (ran > d)
		ran = d;
	th->on_cpu_ns += ran;
	if (th->throttled)
		th->throttled_ns += d - ran;
	else
		th->runq_ns += d - ran;
	th->state = WHY_ON;
	th->ts = now;
	th->exec_base = sum;
	th->last_runq = 0;
	th->tick_pend = 0;
	th->tick_charged = 0;
	counter_inc(&errors, WHY_ERR_UNSEEN);
}

/* The scheduler accounted runtime ns to t (every tick, and as it
 * switches): a target thread on a CPU that has run WHY_TICK_NS since its
 * stacks were last taken gets them taken now, weighted by that runtime,
 * as a profiler's sample is by its period. The switch-out charges the
 * rest of the slice (settle_out). */
static __always_inline void on_runtime(void *ctx, struct task_struct *t, __u64 runtime, const bool btf)
{
	__u32 zero = 0;
	__u32 tid = TASK_FIELD(btf, t, pid);
	struct why_thread *th = bpf_map_lookup_elem(&threads, &tid);
	if (!th)
		return;
	/* The stacks walked are the current task's: the runtime must be its
	 * own (a remote wakeup accounts the other CPU's task). */
	bool own = (__u32)bpf_get_current_pid_tgid() == tid;
	if (own && th->state == WHY_RUNQ)
		came_in_unseen(th, t, btf);
	if (th->depth != 0 || th->state != WHY_ON)
		return;
	th->tick_pend += runtime;
	if (th->tick_pend < WHY_TICK_NS || !own)
		return;
	struct sonde_stack_key *k = bpf_map_lookup_elem(&ticks, &zero);
	if (!k)
		return;
	__u64 ns = th->tick_pend;
	th->tick_charged += ns;
	th->tick_pend = 0;
	k->pid = th->pid;
	k->tid = tid;
	k->unused = 0;
	if (take_stacks_unwind(ctx, &stacks, user_stacks, true, &k->user_stack, &k->kernel_stack))
		counter_inc(&errors, WHY_ERR_STACK);
	if (!map_add(&cpu, k, ns))
		counter_inc(&errors, WHY_ERR_FULL);
	counter_inc(&errors, WHY_ERR_TICK);
}

/* sched_stat_runtime(struct task_struct *curr, u64 runtime[, u64 vruntime before 6.8]) */
TP_BTF_OR_RAW(sched_stat_runtime, sched_stat_runtime)
{
	if (!in_window(bpf_ktime_get_ns()))
		return 0;
	on_runtime(ctx, (struct task_struct *)ctx[0], ctx[1], btf);
	return 0;
}

/* sys_enter(struct pt_regs *regs, long id): the syscall a block is in. */
TP_BTF_OR_RAW(sys_enter, sys_enter)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct why_thread *th = bpf_map_lookup_elem(&threads, &tid);
	if (th)
		th->syscall = (__s32)ctx[1];
	return 0;
}

/* sys_exit(struct pt_regs *regs, long ret) */
TP_BTF_OR_RAW(sys_exit, sys_exit)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct why_thread *th = bpf_map_lookup_elem(&threads, &tid);
	if (th)
		th->syscall = WHY_NO_SYSCALL;
	return 0;
}
