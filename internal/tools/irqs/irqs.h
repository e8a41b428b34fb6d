/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* hardirqs' and softirqs' keys and values, shared by the BPF program and
 * Go (bpfgen -type). */
#ifndef IRQS_H
#define IRQS_H

#define IRQS_NAME 32 /* bytes of a handler's name kept, with its NUL */

/* A histogram slot of one interrupt: log_linear_slot() of a handler's run
 * in ns. */
struct irqs_key {
	__u32 irq;  /* the irq number (hardirqs) or softirq vector (softirqs) */
	__u32 slot;
};

/* The exact totals of one interrupt. */
struct irqs_total {
	__u64 count;  /* handler runs */
	__u64 sum_ns; /* their total time, ns */
	char name[IRQS_NAME]; /* hardirqs: the handler's name (irqaction.name) */
};

enum irqs_counter {
	IRQS_UNKNOWN,  /* exits without their entry (entered before tracing) */
	IRQS_LOST_MAP, /* runs not counted: a map was full */
	IRQS_COUNTERS,
};

#endif
