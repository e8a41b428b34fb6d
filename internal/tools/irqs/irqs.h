/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* hardirqs' and softirqs' keys and values, shared by the BPF program and
 * Go (bpfgen -type). */
#ifndef IRQS_H
#define IRQS_H

#define IRQS_NAME 32 /* bytes of a handler's name kept, with its NUL */

/* The exact totals of one interrupt. */
struct irqs_total {
	__u64 count;  /* handler runs */
	__u64 sum_ns; /* their total time, ns */
	char name[IRQS_NAME]; /* hardirqs: the handler's name (irqaction.name) */
};

/* softirqs: the totals of one vector on one CPU. */
struct irqs_soft {
	__u64 count;  /* runs */
	__u64 sum_ns; /* their total time, ns */
};

/* Softirq vectors kept (the kernel has 10). */
#define IRQS_SOFT_VECS 16

enum irqs_counter {
	IRQS_UNKNOWN,  /* exits without their entry (entered before tracing) */
	IRQS_LOST_MAP, /* runs not counted: a map was full */
	IRQS_COUNTERS,
};

#endif
