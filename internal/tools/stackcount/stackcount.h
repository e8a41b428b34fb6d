/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* stackcount's keys, shared by the BPF program and Go (bpfgen -type). */
#ifndef STACKCOUNT_H
#define STACKCOUNT_H

/* One counted stack: who hit the event, from where (sonde_stack.h). */
struct stackcount_key {
	struct sonde_stack_key at;
	char comm[16];
};

enum stackcount_error {
	STACKCOUNT_ERR_STACK,  /* a kernel stack walk failed */
	STACKCOUNT_ERR_FULL,   /* the counts map was full: hits lost */
	STACKCOUNT_ERR_MAX,
};

#endif
