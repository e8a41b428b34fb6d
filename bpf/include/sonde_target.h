/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The process a tool traces. target_pid is set by user space before load
 * (bpfskel.Tool Consts, or PidConst for a held command); 0 traces every
 * process. Include after <bpf/bpf_helpers.h>. */
#ifndef SONDE_TARGET_H
#define SONDE_TARGET_H

#include <bpf/bpf_core_read.h>

const volatile __u32 target_pid = 0; /* 0: every process */

/* -G/--cgroup: only tasks of this cgroup or its descendants. target_cgroup
 * is the id of its kernfs node (the inode of its directory); 0: every
 * cgroup. target_cgroup_ss is the subsystem id (the line of /proc/cgroups)
 * of the v1 hierarchy it is in, or -1 for the unified (v2) hierarchy. Both
 * are set before load, so with no cgroup the verifier drops the check. */
const volatile __u64 target_cgroup = 0;
const volatile __s32 target_cgroup_ss = -1;

/* How many levels above a task's cgroup are compared with the target. */
#define SONDE_CGROUP_DEPTH 16

/* The cgroup fields read (CO-RE flavours, so programs that declare their
 * own task_struct are not in conflict). */
struct kernfs_node___tgt {
	__u64 id;
} __attribute__((preserve_access_index));
struct cgroup___tgt;
struct cgroup_subsys_state___tgt {
	struct cgroup___tgt *cgroup;
	struct cgroup_subsys_state___tgt *parent;
} __attribute__((preserve_access_index));
struct cgroup___tgt {
	struct cgroup_subsys_state___tgt self;
	struct kernfs_node___tgt *kn;
} __attribute__((preserve_access_index));
struct css_set___tgt {
	struct cgroup_subsys_state___tgt *subsys[1];
	struct cgroup___tgt *dfl_cgrp;
} __attribute__((preserve_access_index));
struct task_struct___tgt {
	struct css_set___tgt *cgroups;
} __attribute__((preserve_access_index));

/* Whether task (a struct task_struct *) is in the target cgroup. */
static __always_inline bool task_cgroup_traced(void *task)
{
	if (!target_cgroup)
		return true;
	struct task_struct___tgt *t = task;
	struct cgroup___tgt *cg = 0;
	if (target_cgroup_ss < 0) {
		cg = BPF_CORE_READ(t, cgroups, dfl_cgrp);
	} else {
		/* subsys[ss]: the array's length depends on the kernel's config,
		 * so the element is read at the relocated offset. */
		struct css_set___tgt *cs = BPF_CORE_READ(t, cgroups);
		struct cgroup_subsys_state___tgt *css = 0;
		__u64 off = bpf_core_field_offset(struct css_set___tgt, subsys) + (__u64)(target_cgroup_ss & 63) * sizeof(void *);
		bpf_probe_read_kernel(&css, sizeof(css), (char *)cs + off);
		if (css)
			cg = BPF_CORE_READ(css, cgroup);
	}
	for (int i = 0; i < SONDE_CGROUP_DEPTH && cg; i++) {
		if (BPF_CORE_READ(cg, kn, id) == target_cgroup)
			return true;
		cg = BPF_CORE_READ(cg, self.parent, cgroup);
	}
	return false;
}

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
