/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The current task's file table, relocated by CO-RE (only the fields read
 * here): the open file behind a descriptor. struct file is the includer's,
 * with the fields it reads of it. Include after <bpf/bpf_core_read.h>. */
#ifndef SONDE_FD_H
#define SONDE_FD_H

struct file;

struct fdtable___fd {
	unsigned int max_fds;
	struct file **fd;
} __attribute__((preserve_access_index));

struct files_struct___fd {
	struct fdtable___fd *fdt;
} __attribute__((preserve_access_index));

struct task_struct___fd {
	struct files_struct___fd *files;
} __attribute__((preserve_access_index));

/* The open file behind fd in the current task's table; NULL when none. */
static __always_inline struct file *fd_file(long fd)
{
	struct task_struct___fd *t = (void *)bpf_get_current_task();
	struct fdtable___fd *fdt = BPF_CORE_READ(t, files, fdt);
	if (!fdt || fd < 0 || (unsigned long)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *f = NULL;
	bpf_probe_read_kernel(&f, sizeof(f), fds + fd);
	return f;
}

#endif
