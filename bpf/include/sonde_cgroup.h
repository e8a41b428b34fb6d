/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The cgroup a tool traces (-G/--cgroup, perf's and bcc's spelling). sonde_target.h
 * includes it; tools with their own pid filter include it alone. Include
 * after <bpf/bpf_helpers.h>. */
#ifndef SONDE_CGROUP_H
#define SONDE_CGROUP_H

#include <bpf/bpf_core_read.h>

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

/* Whether the current task is in the target cgroup. In an interrupt the
 * current task is whoever was interrupted. */
static __always_inline bool cgroup_traced(void)
{
	return task_cgroup_traced((void *)bpf_get_current_task());
}

#endif
