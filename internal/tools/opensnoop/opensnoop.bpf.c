//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* opensnoop: every open, openat and openat2 with its path, flags and
 * result, from the syscalls tracepoints (no kprobes). The entry keeps the
 * path's address and the flags; the exit reads the path (the kernel has
 * just copied it, so its pages are in) and sends the record. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "sonde_target.h"
#include "sonde_cgroup.h"
#include "sonde_syscalls.h"
#include "opensnoop.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 target_tid = 0;     /* only this thread (0: every one) */
const volatile bool failed_only = false; /* only opens that failed */

/* An open between its entry and its exit. */
struct inflight {
	const char *path; /* user address of the path */
	__u64 flags;
	__u32 mode;
	__u32 call; /* enum opensnoop_call */
};

/* key: thread id (u32); value: the open it is making (struct inflight). */
HASH_MAP(inflight, __u32, struct inflight, 10240);

/* key: enum inflight_lost (sonde_maps.h); value: opens lost (u64), per CPU. */
ENUM_COUNTERS(lost, enum inflight_lost, LOST_COUNTERS);

KEEP_TYPE(struct opensnoop_event, event);
KEEP_TYPE(enum opensnoop_call, call);

/* Records to user space: one struct opensnoop_event per open. */
RINGBUF(events, 1 << 20);

/* openat2's struct open_how (user memory). */
struct open_how {
	__u64 flags;
	__u64 mode;
	__u64 resolve;
};

static __always_inline int enter(const char *path, __u64 flags, __u32 mode, __u32 call)
{
	__u64 id;
	if (!current_traced(&id) || (target_tid && (__u32)id != target_tid) || !cgroup_traced())
		return 0;
	__u32 tid = id;
	struct inflight in = {.path = path, .flags = flags, .mode = mode, .call = call};
	if (bpf_map_update_elem(&inflight, &tid, &in, BPF_ANY))
		counter_inc(&lost, LOST_INFLIGHT);
	return 0;
}

static __always_inline int leave(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = id;
	struct inflight *in = bpf_map_lookup_elem(&inflight, &tid);
	if (!in)
		return 0;
	if (failed_only && ret >= 0)
		goto done;
	struct opensnoop_event *e = ring_reserve(&events, sizeof(*e), &lost, LOST_RING);
	if (!e)
		goto done;
	e->time_ns = bpf_ktime_get_ns();
	e->flags = in->flags;
	e->pid = id >> 32;
	e->tid = tid;
	e->uid = (__u32)bpf_get_current_uid_gid();
	e->ret = ret;
	e->mode = in->mode;
	e->call = in->call;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	if (bpf_probe_read_user_str(e->path, sizeof(e->path), in->path) < 0)
		e->path[0] = 0;
	ring_submit(&events, e);
done:
	bpf_map_delete_elem(&inflight, &tid);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_open")
int enter_open(struct sys_enter_args *ctx)
{
	return enter((const char *)ctx->args[0], ctx->args[1], ctx->args[2], OPENSNOOP_OPEN);
}

SEC("tracepoint/syscalls/sys_enter_openat")
int enter_openat(struct sys_enter_args *ctx)
{
	return enter((const char *)ctx->args[1], ctx->args[2], ctx->args[3], OPENSNOOP_OPENAT);
}

SEC("tracepoint/syscalls/sys_enter_openat2")
int enter_openat2(struct sys_enter_args *ctx)
{
	struct open_how how = {};
	bpf_probe_read_user(&how, sizeof(how), (void *)ctx->args[2]);
	return enter((const char *)ctx->args[1], how.flags, how.mode, OPENSNOOP_OPENAT2);
}

SEC("tracepoint/syscalls/sys_exit_open")
int exit_open(struct sys_exit_args *ctx) { return leave(ctx->ret); }

SEC("tracepoint/syscalls/sys_exit_openat")
int exit_openat(struct sys_exit_args *ctx) { return leave(ctx->ret); }

SEC("tracepoint/syscalls/sys_exit_openat2")
int exit_openat2(struct sys_exit_args *ctx) { return leave(ctx->ret); }
