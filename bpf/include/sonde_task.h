/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The task_struct fields sonde's programs read, relocated by CO-RE in the
 * running kernel (only the fields a program touches are relocated), and
 * the shims for fields that changed across kernels. Include after
 * <bpf/bpf_core_read.h>. */
#ifndef SONDE_TASK_H
#define SONDE_TASK_H

struct sched_entity {
	__u64 sum_exec_runtime; /* ns the task has run, kept by the scheduler */
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;  /* thread id */
	int tgid; /* process id */
	unsigned int __state;
	char comm[16];
	struct sched_entity se;
} __attribute__((preserve_access_index));

/* Kernels before 5.14 call the state field "state" (and make it long). */
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

/* The task's state (0: TASK_RUNNING) on any kernel. */
static __always_inline long task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___old *)t, state);
}

/* task_state reading directly from a typed (tp_btf) pointer when btf. */
static __always_inline long task_state_btf(struct task_struct *t, const bool btf)
{
	if (!btf)
		return task_state(t);
	if (bpf_core_field_exists(t->__state))
		return t->__state;
	return ((struct task_struct___old *)t)->state;
}

#endif
