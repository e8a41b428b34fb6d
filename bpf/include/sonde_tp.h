/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* One body, two programs: TP_BTF_OR_RAW(event, name) defines
 * tp_btf_<name> (SEC tp_btf/<event>, typed arguments, 5.5+) and
 * raw_<name> (SEC raw_tp/<event>) running the block that follows, with
 * the tracepoint's arguments in ctx[]. The skeleton (internal/bpfskel)
 * loads one of the two after probing which the kernel supports; the
 * other is never loaded. */
#ifndef SONDE_TP_H
#define SONDE_TP_H

#define TP_BTF_OR_RAW(event, name)                                       \
	static __always_inline int name##_body(__u64 *ctx);                  \
	SEC("tp_btf/" #event)                                                \
	int tp_btf_##name(__u64 *ctx) { return name##_body(ctx); }           \
	SEC("raw_tp/" #event)                                                \
	int raw_##name(__u64 *ctx) { return name##_body(ctx); }              \
	static __always_inline int name##_body(__u64 *ctx)

#endif
