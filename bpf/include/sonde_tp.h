/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* One body, two programs: TP_BTF_OR_RAW(event, name) defines
 * tp_btf_<name> (SEC tp_btf/<event>, typed arguments, 5.5+) and
 * raw_<name> (SEC raw_tp/<event>) running the block that follows, with
 * the tracepoint's arguments in ctx[]. The skeleton (internal/collect/bpfskel)
 * loads one of the two after probing which the kernel supports; the
 * other is never loaded. */
#ifndef SONDE_TP_H
#define SONDE_TP_H

#define TP_BTF_OR_RAW(event, name)                                           \
	static __always_inline int name##_body(__u64 *ctx, const bool btf);      \
	SEC("tp_btf/" #event)                                                    \
	int tp_btf_##name(__u64 *ctx) { return name##_body(ctx, true); }         \
	SEC("raw_tp/" #event)                                                    \
	int raw_##name(__u64 *ctx) { return name##_body(ctx, false); }           \
	static __always_inline int name##_body(__u64 *ctx, const bool btf)

/* The same for uprobes: UPROBE_OR_MULTI(sec, name, call) defines
 * multi_<name> (SEC <sec>.multi: one link for every place, Linux 6.6+)
 * and uprobe_<name> (SEC <sec>: one link per place), each returning call
 * (an expression of ctx). sec is "uprobe" or "uretprobe"; the skeleton
 * loads one of the two (bpfskel.UprobeMulti). */
#define UPROBE_OR_MULTI(sec, name, call)                        \
	SEC(sec ".multi")                                           \
	int multi_##name(void *ctx) { return call; }                \
	SEC(sec)                                                    \
	int uprobe_##name(void *ctx) { return call; }

/* A task field read directly where the program has typed (tp_btf)
 * arguments, through bpf_probe_read_kernel where it has raw ones: btf is
 * the body's constant, so each program keeps only its own branch. A
 * direct load saves a helper call per field on every event. */
#define TASK_FIELD(btf, t, field) ((btf) ? (t)->field : BPF_CORE_READ(t, field))

#endif
