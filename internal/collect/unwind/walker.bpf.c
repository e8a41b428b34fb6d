//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The walker on its own: a perf_event program that walks the sampled
 * task's user stack and counts stacks by key. Its object gives Go the
 * walker's types (bpf2go -type) and lets the package test the walker in
 * the kernel without a tool around it. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#define SONDE_UNWIND
#include "sonde_stack.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

KEEP_TYPE(enum unwind_end, unwind_end);
KEEP_TYPE(enum unwind_flag, unwind_flag);
KEEP_TYPE(enum unwind_notice_kind, unwind_notice_kind);
KEEP_TYPE(struct unwind_notice, unwind_notice);

const volatile __u32 target_pid = 0;

/* key: user stack key (u64, see unwind_stacks); value: samples (u64). */
HASH_MAP(counts, __u64, __u64, 16384);

SEC("perf_event")
int walk_sample(void *ctx)
{
	if ((bpf_get_current_pid_tgid() >> 32) != target_pid)
		return 0;
	__u64 key = unwind_user_stack();
	map_add(&counts, &key, 1);
	return 0;
}

/* The kernel's frame-pointer walk of the same stacks, for comparing costs:
 * key: stack id (u32); value: user pcs. */
STACK_MAP(fp_stacks, 4096);

SEC("perf_event")
int fp_sample(void *ctx)
{
	if ((bpf_get_current_pid_tgid() >> 32) != target_pid)
		return 0;
	__u64 key = (__u32)bpf_get_stackid(ctx, &fp_stacks, BPF_F_USER_STACK);
	map_add(&counts, &key, 1);
	return 0;
}
