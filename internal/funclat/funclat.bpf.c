//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* funclat: latency of functions. An entry probe stores the time per
 * (thread, function); the return probe sends the elapsed time to user space
 * through a ring buffer, so percentiles are exact. The function index comes
 * from the attach cookie, so one program serves many functions. User
 * functions use uprobes; kernel functions fentry/fexit, else kprobes. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "funclat.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

KEEP_TYPE(struct funclat_event, funclat_event);

const volatile __u32 target_pid = 0; /* 0: every process */

struct key {
	__u32 tid;
	__u32 fn;
};

/* key: (tid, function); value: entry time (u64 ns). */
HASH_MAP(starts, struct key, __u64, 65536);

/* Completed calls (struct funclat_event), 4 MiB. */
RINGBUF(events, 4 << 20);

/* key: 0; value: calls lost because the ring buffer was full (u64), per CPU. */
PERCPU_COUNTERS(drops, 1);

static __always_inline int entry(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (target_pid && (id >> 32) != target_pid)
		return 0;
	struct key k = {.tid = (__u32)id, .fn = (__u32)bpf_get_attach_cookie(ctx)};
	__u64 now = bpf_ktime_get_ns();
	bpf_map_update_elem(&starts, &k, &now, BPF_ANY);
	return 0;
}

/* Send one completed call that started at *ts, or count it as dropped. */
static __always_inline void submit(__u64 ts, __u32 fn, __u64 id)
{
	struct funclat_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		counter_inc(&drops, 0);
		return;
	}
	e->latency_ns = bpf_ktime_get_ns() - ts;
	e->fn = fn;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	bpf_ringbuf_submit(e, 0);
}

static __always_inline int ret(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct key k = {.tid = (__u32)id, .fn = (__u32)bpf_get_attach_cookie(ctx)};
	__u64 *ts = bpf_map_lookup_elem(&starts, &k);
	if (!ts)
		return 0;
	submit(*ts, k.fn, id);
	bpf_map_delete_elem(&starts, &k);
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
 * call is counted, untimed. The registers are read through CO-RE, so one
 * object serves both architectures. */
struct pt_regs___x86 {
	unsigned long sp;
	unsigned long r14;
} __attribute__((preserve_access_index));

struct pt_regs___arm64 {
	__u64 regs[31];
	__u64 sp;
} __attribute__((preserve_access_index));

struct gokey {
	__u64 g;
	__u64 sp;
	__u32 fn;
	__u32 _pad;
};

/* key: (goroutine, stack pointer at entry, function); value: entry time
 * (u64 ns). LRU: an entry whose return is never seen (a panic unwound
 * through it, or the stack moved) ages out instead of filling the map. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct gokey);
	__type(value, __u64);
	__uint(max_entries, 65536);
} gostarts SEC(".maps");

/* key: function index; value: returns whose entry was not found (counted,
 * not timed), per CPU. */
PERCPU_COUNTERS(untimed, MAX_FUNCS);

static __always_inline bool go_key(void *ctx, struct gokey *k)
{
	if (bpf_core_field_exists(((struct pt_regs___x86 *)0)->r14)) {
		struct pt_regs___x86 *r = ctx;
		k->g = BPF_CORE_READ(r, r14);
		k->sp = BPF_CORE_READ(r, sp);
		return true;
	}
	if (bpf_core_field_exists(((struct pt_regs___arm64 *)0)->regs)) {
		struct pt_regs___arm64 *r = ctx;
		k->g = BPF_CORE_READ(r, regs[28]);
		k->sp = BPF_CORE_READ(r, sp);
		return true;
	}
	return false;
}

/* The key of this Go call, in the traced process only. */
static __always_inline bool go_call(void *ctx, __u64 id, struct gokey *k)
{
	if (target_pid && (id >> 32) != target_pid)
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
	submit(*ts, k.fn, id);
	bpf_map_delete_elem(&gostarts, &k);
	return 0;
}

/* The attach target is set before load (the skeleton loads a copy of
 * each program per function). */
SEC("fentry/vfs_read")
int fentry_entry(void *ctx) { return entry(ctx); }

SEC("fexit/vfs_read")
int fexit_return(void *ctx) { return ret(ctx); }
