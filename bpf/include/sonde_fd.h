/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The open file behind a descriptor of the current task, read through its
 * file table (CO-RE: the ___fd flavours match the kernel's task_struct,
 * files_struct and fdtable). The file comes back untyped: each tool reads
 * it through its own struct file, with only the fields it needs.
 * Include after <bpf/bpf_core_read.h>. */
#ifndef SONDE_FD_H
#define SONDE_FD_H

struct file___fd;

struct fdtable___fd {
	unsigned int max_fds;
	struct file___fd **fd;
} __attribute__((preserve_access_index));

struct files_struct___fd {
	struct fdtable___fd *fdt;
} __attribute__((preserve_access_index));

struct task_struct___fd {
	struct files_struct___fd *files;
} __attribute__((preserve_access_index));

/* The struct file open at fd in the current task; NULL when none. */
static __always_inline void *fd_file(long fd)
{
	struct task_struct___fd *t = (void *)bpf_get_current_task();
	struct fdtable___fd *fdt = BPF_CORE_READ(t, files, fdt);
	if (!fdt || fd < 0 || (unsigned long)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	struct file___fd **fds = BPF_CORE_READ(fdt, fd);
	void *f = NULL;
	bpf_probe_read_kernel(&f, sizeof(f), fds + fd);
	return f;
}

#endif
