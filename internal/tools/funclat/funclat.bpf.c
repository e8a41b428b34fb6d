//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* funclat: latency of functions. An entry probe stores the time per
 * (thread, function); the return probe adds the elapsed time to the
 * function's histogram in the kernel, in internal/model/histogram's buckets
 * (percentiles within 1/256; count, sum, min and max exact), so no event
 * crosses to user space: a ring buffer record per call cost more than
 * the probe's own work (bench -cost). The function index comes
 * from the attach cookie, so one program serves many functions. User
 * functions use uprobes; kernel functions fentry/fexit, else kprobes. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "sonde_target.h"
#include "sonde_regs.h"
#include "sonde_hist.h"
#include "funclat.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";


/* Entry times of the functions a thread is in, by function index (the
 * attach cookie), 0 when not in it. */
struct starts_val {
	__u64 ts[MAX_FUNCS];
};

/* key: the task (task storage); value: struct starts_val (ns). Task
 * storage hangs off the task: one pointer away, where a hash keyed by
 * (tid, function) costs a hashed update per entry and a lookup and a
 * delete per return. */
TASK_STORAGE(starts, struct starts_val);

/* key: function index × HIST_SLOTS + slot (u32); value: calls (u64).
 * max_entries is set at load to the functions traced × HIST_SLOTS (59 KiB
 * each). Shared by the CPUs (atomic adds: per-CPU copies would multiply
 * the memory by the CPUs) and mmapable: user space reads it in one copy. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, HIST_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
} hist SEC(".maps");

/* key: function index (u32); value: struct sonde_hist_sums (ns), per CPU (no
 * atomics on the hot path; user space merges the CPUs). */
PERCPU_ARRAY(sums, struct sonde_hist_sums, MAX_FUNCS);

/* key: 0; value: calls not counted (a slot outside the map), per CPU. */
PERCPU_COUNTERS(drops, 1);

/* Count one completed call of fn that started at ts. */
static __always_inline void record(__u64 ts, __u32 fn)
{
	__u64 d = bpf_ktime_get_ns() - ts;
	if (fn >= MAX_FUNCS)
		return;
	__u32 k = fn * HIST_SLOTS + hist_slot(d);
	__u64 *c = bpf_map_lookup_elem(&hist, &k);
	if (!c) {
		counter_inc(&drops, 0);
		return;
	}
	__sync_fetch_and_add(c, 1);
	struct sonde_hist_sums *s = bpf_map_lookup_elem(&sums, &fn);
	if (s)
		hist_sums_add(s, d);
}

static __always_inline int entry(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (!pid_traced(id >> 32))
		return 0;
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx);
	struct starts_val *s = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (s && fn < MAX_FUNCS)
		s->ts[fn] = bpf_ktime_get_ns();
	return 0;
}

static __always_inline int ret(void *ctx)
{
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx);
	struct starts_val *s = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), 0, 0);
	if (!s || fn >= MAX_FUNCS || !s->ts[fn])
		return 0;
	record(s->ts[fn], fn);
	s->ts[fn] = 0;
	return 0;
}

SEC("uprobe")
int uprobe_entry(void *ctx) { return entry(ctx); }

SEC("uretprobe")
int uprobe_return(void *ctx) { return ret(ctx); }

SEC("kprobe")
int kprobe_entry(void *ctx) { return entry(ctx); }

SEC("kretprobe")
int kprobe_return(void *ctx) { return ret(ctx); }

/* Go binaries. A uretprobe rewrites the return address on the stack, and
 * Go moves and walks goroutine stacks: the runtime aborts the program
 * ("unexpected return pc"). So Go functions are timed from a uprobe on
 * their first instruction to uprobes on each return instruction, which
 * change nothing the program can see. A goroutine may move between
 * threads during a call, so calls are keyed by goroutine (the g register:
 * r14 on amd64, x28 on arm64, by Go's internal ABI) and stack pointer,
 * which is the same at the first instruction and at the return. If the
 * goroutine's stack is moved during the call the pointers differ: the
 * call is counted, untimed. The registers are read as sonde_regs.h says, so
 * one object serves both architectures. */
struct gokey {
	__u64 g;
	__u64 sp;
	__u32 fn;
	__u32 _pad;
};

/* key: (goroutine, stack pointer at entry, function); value: entry time
 * (u64 ns). LRU: an entry whose return is never seen (a panic unwound
 * through it, or the stack moved) ages out instead of filling the map. */
SONDE_MAP(gostarts, BPF_MAP_TYPE_LRU_HASH, struct gokey, __u64, 65536);

/* key: function index; value: returns whose entry was not found (counted,
 * not timed), per CPU. */
PERCPU_COUNTERS(untimed, MAX_FUNCS);

static __always_inline bool go_key(void *ctx, struct gokey *k)
{
	k->sp = reg_sp(ctx);
	return reg_goroutine(ctx, &k->g);
}

/* The key of this Go call, in the traced process only. */
static __always_inline bool go_call(void *ctx, __u64 id, struct gokey *k)
{
	if (!pid_traced(id >> 32))
		return false;
	k->fn = (__u32)bpf_get_attach_cookie(ctx);
	return go_key(ctx, k);
}

SEC("uprobe")
int uprobe_go_entry(void *ctx)
{
	struct gokey k = {};
	if (!go_call(ctx, bpf_get_current_pid_tgid(), &k))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	bpf_map_update_elem(&gostarts, &k, &now, BPF_ANY);
	return 0;
}

SEC("uprobe")
int uprobe_go_return(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct gokey k = {};
	if (!go_call(ctx, id, &k))
		return 0;
	__u64 *ts = bpf_map_lookup_elem(&gostarts, &k);
	if (!ts) {
		counter_inc(&untimed, k.fn);
		return 0;
	}
	record(*ts, k.fn);
	bpf_map_delete_elem(&gostarts, &k);
	return 0;
}

/* The attach target is set before load (the skeleton loads a copy of
 * each program per function). */
SEC("fentry/vfs_read")
int fentry_entry(void *ctx) { return entry(ctx); }

SEC("fexit/vfs_read")
int fexit_return(void *ctx) { return ret(ctx); }
