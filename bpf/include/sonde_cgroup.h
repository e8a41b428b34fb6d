/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The cgroup a tool traces (bcc's -G/--cgroup): target_cgroup is the id
 * of a cgroup v2 directory (its inode number), set by user space before
 * load; 0 traces every cgroup. Only meaningful in process context: in an
 * interrupt the current task is whoever was interrupted. Include after
 * <bpf/bpf_helpers.h>. */
#ifndef SONDE_CGROUP_H
#define SONDE_CGROUP_H

const volatile __u64 target_cgroup = 0; /* 0: every cgroup */

/* Whether the current task is in the traced cgroup (exactly it, not a
 * descendant: bcc's cgroup map means the same). */
static __always_inline bool cgroup_traced(void)
{
	return !target_cgroup || bpf_get_current_cgroup_id() == target_cgroup;
}

#endif
