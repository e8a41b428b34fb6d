/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The records of the raw_syscalls and syscalls tracepoints: a stable layout
 * of 8 bytes of common fields, then the syscall number, then its arguments
 * (entry) or its return value (exit). */
#ifndef SONDE_SYSCALLS_H
#define SONDE_SYSCALLS_H

struct sys_enter_args {
	__u64 common;
	long id;
	unsigned long args[6];
};

struct sys_exit_args {
	__u64 common;
	long id;
	long ret;
};

#endif
