//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* offcpu: time threads spend blocked, per blocked stack (offcputime) and,
 * with waker tracking, per blocked stack and waker stack (offwaketime).
 * sched_switch: the task leaving the CPU gets a timestamp and its stacks;
 * when it runs again the blocked time is added to its bucket. sched_waking:
 * the waker's stacks are remembered for the woken thread. All aggregation
 * happens in the kernel. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "sonde_cgroup.h"
#define SONDE_UNWIND
#include "sonde_stack.h"
#include "sonde_task.h"
#include "sonde_tp.h"
#include "offcpu.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

STACK_OPTIONS;
const volatile bool track_wakers = false;
const volatile __u64 min_block_ns = 1000;
const volatile __u64 max_block_ns = ~0ULL;
const volatile __u32 state_mask = 0;     /* 0: any state; else bit per TASK_* state */
const volatile bool include_idle = false;

struct start {
	__u64 ts;
	struct offcpu_key key;
};

/* key: tid (u32); value: when it left the CPU and its bucket so far. */
HASH_MAP(starts, __u32, struct start, 32768);

struct waker {
	__u64 user_stack; /* key in unwind_stacks, 0: none */
	__u32 pid;
	__s32 kernel_stack;
	char comm[16];
};

/* key: woken tid (u32); value: who woke it, from which stacks. */
HASH_MAP(wakers, __u32, struct waker, 32768);

/* Kernel stacks (see sonde_stack.h); user stacks go to unwind_stacks. */
STACK_MAP(stacks, 16384);

/* key: struct offcpu_key; value: blocked time (u64 ns). Every process has
 * keys of its own (its pid, its stacks at random addresses): system-wide
 * with short processes starting all the time, 65,536 preallocated keys
 * were full within 30 s (32,910 blocks lost). Allocated on insert, so
 * memory follows the keys met. */
SONDE_MAP_FLAGS(blocked, BPF_MAP_TYPE_HASH, struct offcpu_key, __u64, 262144, BPF_F_NO_PREALLOC);

/* key: enum offcpu_error; value: count (u64), per CPU. */
ENUM_COUNTERS(errors, enum offcpu_error, OFFCPU_ERR_MAX);

static __always_inline bool wanted(__u32 pid, __u32 tid)
{
	if (tid == 0 && !include_idle)
		return false;
	return !target_pid || pid == target_pid;
}

static __always_inline int on_switch(void *ctx, struct task_struct *prev, struct task_struct *next, const bool btf)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 ppid = TASK_FIELD(btf, prev, tgid), ptid = TASK_FIELD(btf, prev, pid);
	__u32 ntid = TASK_FIELD(btf, next, pid);

	/* The task leaving: remember when and where. ctx is prev's context,
	 * so the stack walks see prev's stacks. */
	if (wanted(ppid, ptid) && task_cgroup_traced(prev)) {
		long st = task_state_btf(prev, btf);
		/* TASK_DEAD (0x80): a task's last switch, after its exit; it
		 * never comes back to end the block, and its entry in starts
		 * would stay there until the map was full. */
		if (!(st & 0x80) && (!state_mask || (st == 0 ? (state_mask & 0x100) : (state_mask & st)))) {
			struct start s = {};
			s.ts = now;
			s.key.pid = ppid;
			s.key.tid = per_thread ? ptid : 0;
			if (btf)
				__builtin_memcpy(&s.key.comm, prev->comm, sizeof(s.key.comm));
			else
				BPF_CORE_READ_STR_INTO(&s.key.comm, prev, comm);
			if (take_stacks_unwind(ctx, &stacks, user_stacks, kernel_stacks, &s.key.user_stack, &s.key.kernel_stack))
				counter_inc(&errors, OFFCPU_ERR_STACK);
			if (bpf_map_update_elem(&starts, &ptid, &s, BPF_ANY) != 0)
				counter_inc(&errors, OFFCPU_ERR_FULL);
		}
	}
	/* The task arriving: account its blocked time. */
	struct start *s = bpf_map_lookup_elem(&starts, &ntid);
	if (!s)
		return 0;
	__u64 delta = now - s->ts;
	if (delta >= min_block_ns && delta <= max_block_ns) {
		struct offcpu_key key = s->key;
		if (track_wakers) {
			struct waker *w = bpf_map_lookup_elem(&wakers, &ntid);
			if (w) {
				key.waker_pid = w->pid;
				key.waker_user_stack = w->user_stack;
				key.waker_kernel_stack = w->kernel_stack;
				__builtin_memcpy(key.waker_comm, w->comm, sizeof(key.waker_comm));
			} else {
				key.waker_user_stack = 0;
				key.waker_kernel_stack = STACK_NONE;
			}
		}
		if (!map_add(&blocked, &key, delta))
			counter_inc(&errors, OFFCPU_ERR_FULL);
	}
	bpf_map_delete_elem(&starts, &ntid);
	if (track_wakers)
		bpf_map_delete_elem(&wakers, &ntid);
	return 0;
}

static __always_inline int on_waking(void *ctx, struct task_struct *p, const bool btf)
{
	__u32 tid = TASK_FIELD(btf, p, pid);
	__u32 pid = TASK_FIELD(btf, p, tgid);
	if (!track_wakers || !wanted(pid, tid))
		return 0;
	/* Only a task whose block is being timed needs its waker: the stack
	 * walks are most of the cost, so skip them for every other wakeup
	 * (a new task, one preempted and woken, one filtered out at switch). */
	if (!bpf_map_lookup_elem(&starts, &tid))
		return 0;
	struct waker w = {};
	w.pid = bpf_get_current_pid_tgid() >> 32;
	bpf_get_current_comm(&w.comm, sizeof(w.comm));
	take_stacks_unwind(ctx, &stacks, user_stacks, kernel_stacks, &w.user_stack, &w.kernel_stack);
	bpf_map_update_elem(&wakers, &tid, &w, BPF_ANY);
	return 0;
}

/* sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next, ...) */
TP_BTF_OR_RAW(sched_switch, sched_switch)
{
	return on_switch(ctx, (struct task_struct *)ctx[1], (struct task_struct *)ctx[2], btf);
}

/* sched_waking(struct task_struct *p) */
TP_BTF_OR_RAW(sched_waking, sched_waking)
{
	return on_waking(ctx, (struct task_struct *)ctx[0], btf);
}
