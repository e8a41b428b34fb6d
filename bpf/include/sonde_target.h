/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The process a tool traces. target_pid is set by user space before load
 * (bpfskel.Tool Consts, or PidConst for a held command); 0 traces every
 * process. Include after <bpf/bpf_helpers.h>. */
#ifndef SONDE_TARGET_H
#define SONDE_TARGET_H

#include "sonde_cgroup.h"

const volatile __u32 target_pid = 0; /* 0: every process */

#ifdef SONDE_GATED
/* A tool that defines SONDE_GATED traces nothing until the skeleton opens
 * its gate (bpfskel.Tool.Gate "armed"): 1 once every program is attached
 * and a held command released, 0 again before any is detached. */
volatile __u32 armed = 0;
#define SONDE_GATE_OPEN armed
#else
#define SONDE_GATE_OPEN 1
#endif

/* Whether process pid is traced (and the gate, if any, open). */
static __always_inline bool pid_traced(__u32 pid)
{
	return SONDE_GATE_OPEN && (!target_pid || pid == target_pid);
}

/* The current thread's pid_tgid, in *id; whether its process is traced
 * (and in the target cgroup). */
static __always_inline bool current_traced(__u64 *id)
{
	*id = bpf_get_current_pid_tgid();
	return pid_traced(*id >> 32) && task_cgroup_traced((void *)bpf_get_current_task());
}

/* TRACED_PROG(sec, name, ctx_type) defines program name (SEC sec, taking
 * ctx_type *ctx) that runs the block that follows only for threads of the
 * traced process, with ctx, id (pid_tgid) and tid in scope. */
#define TRACED_PROG(sec, name, ctx_type)                                             \
	static __always_inline int name##_traced(ctx_type *ctx, __u64 id, __u32 tid);  \
	SEC(sec)                                                                       \
	int name(ctx_type *ctx)                                                        \
	{                                                                              \
		__u64 id;                                                                  \
		return current_traced(&id) ? name##_traced(ctx, id, (__u32)id) : 0;        \
	}                                                                              \
	static __always_inline int name##_traced(ctx_type *ctx, __u64 id, __u32 tid)

#endif
