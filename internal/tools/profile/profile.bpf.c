//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* profile: count on-CPU stacks in the kernel. A perf_event program runs at
 * every cpu-clock sample, looks up the user and kernel stack ids and bumps a
 * counter; user space reads the totals once, so no per-sample traffic
 * crosses to user space. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "sonde_cgroup.h"
#define SONDE_UNWIND
#include "sonde_stack.h"
#include "profile.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Options set before load. */
STACK_OPTIONS;
const volatile bool include_idle = false;

/* Unused: take_stacks_unwind's stack map, which kernel stacks no longer
 * go to (kstacks). */
STACK_MAP(stacks, 1);

/* key: hash of a kernel stack's frames (u64, never 0); value: struct
 * profile_kstack. Kernel stacks are stored as user stacks are
 * (unwind_stacks), not in a stack map: a stack map's id is a bucket, and a
 * new stack whose bucket holds another one is refused (-EEXIST): 3,371 of
 * 106,198 samples had no kernel stack at 999 Hz system-wide for 60 s with
 * processes starting, in a 16,384-bucket map. Allocated on insert: memory
 * follows distinct stacks; as many as counts has keys. */
SONDE_MAP_FLAGS(kstacks, BPF_MAP_TYPE_HASH, __u64, struct profile_kstack, 65536, BPF_F_NO_PREALLOC);

/* The kernel stack being taken: a struct profile_kstack and one more
 * slot, so a frame index masked to 7 bits stays inside. */
struct kstack_scratch {
	__u64 ips[MAX_STACK_DEPTH + 1];
};

/* key: 0 (u32); value: the kernel stack being taken, per CPU (1 KB: more
 * than the BPF stack). */
PERCPU_ARRAY(kscratch, struct kstack_scratch, 1);

/* key: struct profile_key; value: samples (u64 count). A plain hash: the
 * per-key counter is bumped atomically, and per-CPU values would double the
 * memory for no gain at these rates. */
HASH_MAP(counts, struct profile_key, __u64, 65536);

/* key: enum profile_error; value: occurrences (u64), per CPU. */
ENUM_COUNTERS(errors, enum profile_error, ERR_MAX);

/* Add one sample to key in counts; false when counts is full. */
static __always_inline bool count_sample(struct profile_key *key)
{
	__u64 *v = bpf_map_lookup_elem(&counts, key);
	if (v) {
		__sync_fetch_and_add(v, 1);
		return true;
	}
	__u64 one = 1;
	long err = bpf_map_update_elem(&counts, key, &one, BPF_NOEXIST);
	if (err == 0)
		return true;
	/* -EEXIST: another CPU created it first. */
	return map_add(&counts, key, 1);
}

/* Store this CPU's kernel stack (kscratch) in kstacks when new and return
 * its key (a hash of its frames), or 0 when it could not be stored
 * (counted). A global function: the verifier checks it once, not once for
 * every path through the user-stack walk before it (inlined, do_sample
 * was too large). */
__noinline __u64 kstack_store(void)
{
	__u32 zero = 0;
	struct kstack_scratch *ks = bpf_map_lookup_elem(&kscratch, &zero);
	if (!ks)
		return 0;
	__u64 h = 0xcbf29ce484222325ULL;
	for (int i = 0; i < MAX_STACK_DEPTH; i++) {
		__u64 ip = ks->ips[i & MAX_STACK_DEPTH];
		if (ip == 0)
			break; /* bpf_get_stack zeroes what it does not fill */
		h ^= ip;
		h *= 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	if (h == 0)
		h = 1;
	if (!bpf_map_lookup_elem(&kstacks, &h)) {
		long err = bpf_map_update_elem(&kstacks, &h, ks, BPF_NOEXIST);
		if (err && err != -17 /* -EEXIST: another CPU stored it first */) {
			counter_inc(&errors, ERR_KERNEL_STACK);
			return 0;
		}
	}
	return h;
}

/* The current kernel stack's key in kstacks; 0 when there is none (a
 * sample in user mode) or it could not be stored. */
static __always_inline __u64 kernel_stack(void *ctx)
{
	__u32 zero = 0;
	struct kstack_scratch *ks = bpf_map_lookup_elem(&kscratch, &zero);
	if (!ks)
		return 0;
	if (bpf_get_stack(ctx, ks->ips, sizeof(struct profile_kstack), 0) <= 0)
		return 0;
	return kstack_store();
}

SEC("perf_event")
int do_sample(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id;
	struct profile_key key = {};

	if (tid == 0 && !include_idle)
		return 0;
	if (target_pid && pid != target_pid)
		return 0;
	if (!task_cgroup_traced((void *)bpf_get_current_task()))
		return 0;
	key.pid = pid;
	key.tid = per_thread ? tid : 0;
	bpf_get_current_comm(&key.comm, sizeof(key.comm));
	__s32 unused;
	take_stacks_unwind(ctx, &stacks, user_stacks, false, &key.user_stack, &unused);
	if (kernel_stacks)
		key.kernel_stack = kernel_stack(ctx);
	if (!count_sample(&key))
		counter_inc(&errors, ERR_COUNTS_FULL);
	return 0;
}
