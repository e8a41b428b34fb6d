//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* execsnoop: every execve and execveat, with its caller, its result and
 * its arguments, from the syscalls tracepoints (no kprobes). The arguments
 * are read at entry, while the old program's memory still holds them; the
 * record is sent at exit, with the return value and the new name. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "sonde_target.h"
#include "sonde_syscalls.h"
#include "execsnoop.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Only the fields read here, relocated by CO-RE. */
struct task_struct {
	int tgid;
	struct task_struct *real_parent;
} __attribute__((preserve_access_index));

/* key: process id (u32: after an exec by another thread the caller's tid
 * becomes the process id, so the exit finds it by that); value: the exec
 * being made (struct execsnoop_event, filled at entry). */
HASH_MAP(inflight, __u32, struct execsnoop_event, 10240);

/* key: 0; value: a zeroed record to start an entry from (a 2.6 KB value
 * does not fit on the BPF stack). */
PERCPU_ARRAY(empty, struct execsnoop_event, 1);

/* key: enum inflight_lost (sonde_maps.h); value: execs lost (u64), per CPU. */
ENUM_COUNTERS(lost, enum inflight_lost, LOST_COUNTERS);

/* Records to user space: one struct execsnoop_event per exec. */
RINGBUF(events, 1 << 20);

static __always_inline int enter(unsigned long argv_addr)
{
	__u64 id;
	if (!current_traced(&id))
		return 0;
	__u32 pid = id >> 32, zero = 0;
	struct execsnoop_event *blank = bpf_map_lookup_elem(&empty, &zero);
	if (!blank)
		return 0;
	if (bpf_map_update_elem(&inflight, &pid, blank, BPF_ANY)) {
		counter_inc(&lost, LOST_INFLIGHT);
		return 0;
	}
	struct execsnoop_event *e = bpf_map_lookup_elem(&inflight, &pid);
	if (!e)
		return 0;
	e->pid = pid;
	e->uid = (__u32)bpf_get_current_uid_gid();
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	e->ppid = BPF_CORE_READ(t, real_parent, tgid);
	const char *const *argv = (const char *const *)argv_addr;
	for (int i = 0; i < EXECSNOOP_MAX_ARGS; i++) {
		const char *arg = 0;
		if (bpf_probe_read_user(&arg, sizeof(arg), &argv[i]) || !arg)
			return 0;
		long n = bpf_probe_read_user_str(e->argv[i], EXECSNOOP_ARG_SIZE, arg);
		if (n < 0)
			return 0;
		e->args = i + 1;
		if (n == EXECSNOOP_ARG_SIZE)
			e->cut = 1; /* filled the slot: the argument may go on */
	}
	const char *more = 0;
	if (!bpf_probe_read_user(&more, sizeof(more), &argv[EXECSNOOP_MAX_ARGS]) && more)
		e->cut = 1;
	return 0;
}

static __always_inline int leave(long ret)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct execsnoop_event *e = bpf_map_lookup_elem(&inflight, &pid);
	if (!e)
		return 0;
	e->ret = ret;
	e->time_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	/* Only the argument slots in use: most execs have a few arguments,
	 * and the copy is most of this program's cost. User space zero-fills
	 * the rest. No wakeup per exec (a self-IPI each under virtualization):
	 * the reader polls every 50 ms, or is woken once a batch waits or when
	 * it sleeps (ring_flags). */
	__u64 size = __builtin_offsetof(struct execsnoop_event, argv) + (__u64)e->args * EXECSNOOP_ARG_SIZE;
	/* The bound on the very register passed (clang may otherwise clamp a
	 * copy the verifier does not connect to it). */
	asm volatile("%[size] &= 0xfff" : [size] "+r"(size));
	if (size > sizeof(*e))
		size = sizeof(*e);
	asm volatile("" : [size] "+r"(size));
	if (bpf_ringbuf_output(&events, e, size, ring_flags(&events)))
		counter_inc(&lost, LOST_RING);
	bpf_map_delete_elem(&inflight, &pid);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_execve")
int enter_execve(struct sys_enter_args *ctx) { return enter(ctx->args[1]); }

SEC("tracepoint/syscalls/sys_enter_execveat")
int enter_execveat(struct sys_enter_args *ctx) { return enter(ctx->args[2]); }

SEC("tracepoint/syscalls/sys_exit_execve")
int exit_execve(struct sys_exit_args *ctx) { return leave(ctx->ret); }

SEC("tracepoint/syscalls/sys_exit_execveat")
int exit_execveat(struct sys_exit_args *ctx) { return leave(ctx->ret); }
