//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* irqs: time in hard interrupt handlers (hardirqs) and in softirq vectors
 * (softirqs), from the irq tracepoints (tp_btf, else raw_tp). Each entry
 * notes the time on its CPU; the exit adds the run to its interrupt's
 * exact totals and, with dist, to its histogram. Hard handlers do not
 * nest (they run with interrupts off), nor do softirqs; a hard interrupt
 * may land inside a softirq, so each kind has its own start. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_bits.h"
#include "sonde_maps.h"
#include "sonde_tp.h"
#include "irqs.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool dist = false; /* also keep a histogram per interrupt */

/* Only the field read here, relocated by CO-RE. */
struct irqaction {
	const char *name;
} __attribute__((preserve_access_index));

/* key: 0 hard, 1 soft; value: when this CPU entered the handler (u64 ns,
 * 0: not inside one), per CPU. */
PERCPU_ARRAY(starts, __u64, 2);

/* key: irq (u32); value: struct irqs_total (hardirqs). */
HASH_MAP(totals, __u32, struct irqs_total, 4096);

/* key: softirq vector (u32); value: struct irqs_soft, per CPU: softirqs
 * need no name and no atomics. */
PERCPU_ARRAY(soft_totals, struct irqs_soft, IRQS_SOFT_VECS);

/* key: struct sonde_slot (group: the irq number or softirq vector; slot
 * of a handler's run in ns); value: runs in that slot (u64 count). */
HASH_MAP(hist, struct sonde_slot, __u64, 65536);

/* key: enum irqs_counter; value: count (u64), per CPU. */
ENUM_COUNTERS(counts, enum irqs_counter, IRQS_COUNTERS);

static __always_inline int enter(__u32 kind)
{
	__u64 *ts = bpf_map_lookup_elem(&starts, &kind);
	if (ts)
		*ts = bpf_ktime_get_ns();
	return 0;
}

static __always_inline int leave(__u32 kind, __u32 irq, struct irqaction *action)
{
	__u64 *ts = bpf_map_lookup_elem(&starts, &kind);
	if (!ts)
		return 0;
	if (!*ts) {
		counter_inc(&counts, IRQS_UNKNOWN);
		return 0;
	}
	__u64 d = bpf_ktime_get_ns() - *ts;
	*ts = 0;
	if (kind == 1) {
		struct irqs_soft *st = bpf_map_lookup_elem(&soft_totals, &irq);
		if (!st) {
			counter_inc(&counts, IRQS_LOST_MAP);
			return 0;
		}
		st->count++;
		st->sum_ns += d;
		goto slot;
	}
	struct irqs_total *t = bpf_map_lookup_elem(&totals, &irq);
	if (!t) {
		struct irqs_total fresh = {};
		if (action)
			bpf_probe_read_kernel_str(fresh.name, sizeof(fresh.name), BPF_CORE_READ(action, name));
		bpf_map_update_elem(&totals, &irq, &fresh, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&totals, &irq);
		if (!t) {
			counter_inc(&counts, IRQS_LOST_MAP);
			return 0;
		}
	}
	__sync_fetch_and_add(&t->count, 1);
	__sync_fetch_and_add(&t->sum_ns, d);
slot:
	if (dist) {
		struct sonde_slot k = {.group = irq, .slot = log_linear_slot(d)};
		if (!map_add(&hist, &k, 1))
			counter_inc(&counts, IRQS_LOST_MAP);
	}
	return 0;
}

/* irq_handler_entry(int irq, struct irqaction *action) */
TP_BTF_OR_RAW(irq_handler_entry, hard_entry)
{
	return enter(0);
}

/* irq_handler_exit(int irq, struct irqaction *action, int ret) */
TP_BTF_OR_RAW(irq_handler_exit, hard_exit)
{
	return leave(0, (__u32)ctx[0], (struct irqaction *)ctx[1]);
}

/* softirq_entry(unsigned int vec_nr) */
TP_BTF_OR_RAW(softirq_entry, soft_entry)
{
	return enter(1);
}

/* softirq_exit(unsigned int vec_nr) */
TP_BTF_OR_RAW(softirq_exit, soft_exit)
{
	return leave(1, (__u32)ctx[0], NULL);
}
