//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* pair: latency between two tracepoints, paired in the kernel by key fields
 * read from each event's raw record at offsets taken from tracefs format
 * files (set before load). Every match goes to user space through a ring
 * buffer, so percentiles are exact and --events can print each pair.
 *
 * A chain adds a mid event (block_rq_insert → block_rq_issue →
 * block_rq_complete): pairs are timed mid → end, and each carries the
 * start → mid time of the same entry, so the two stages of one request
 * are joined in the kernel, not guessed from timestamps later. A mid
 * without a start (no I/O scheduler) still makes a pair. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include "sonde_maps.h"
#include "sonde_target.h"
#include "pair.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Keep the shared types in BTF for bpf2go -type. */
KEEP_TYPE(struct pair_event, pair_event);

/* Options set before load: field offsets and sizes in bytes, from the
 * events' format files; nkeys == 0 pairs by thread id. */
const volatile __u32 nkeys = 0;
const volatile __u32 start_off[PAIR_MAX_KEYS] = {};
const volatile __u32 start_size[PAIR_MAX_KEYS] = {};
const volatile __u32 end_off[PAIR_MAX_KEYS] = {};
const volatile __u32 end_size[PAIR_MAX_KEYS] = {};
const volatile __u32 group_off = 0;
const volatile __u32 group_size = 0; /* 0: no group field */
const volatile __u32 aux_off = 0;
const volatile __u32 aux_size = 0; /* 0: no aux field */
const volatile __u32 has_mid = 0;    /* 1: a chain, on_mid is attached */
const volatile bool want_comm = true; /* false: no view shows the task's name */
const volatile __u32 mid_off[PAIR_MAX_KEYS] = {};
const volatile __u32 mid_size[PAIR_MAX_KEYS] = {};
const volatile __u32 mid_group_off = 0;
const volatile __u32 mid_group_size = 0;
const volatile __u32 mid_aux_off = 0;
const volatile __u32 mid_aux_size = 0;

struct start_val {
	__u64 ts;     /* start, ns; 0 in a chain whose start was not seen */
	__u64 mid_ts; /* mid, ns; 0 until it is seen (chains only) */
	__u64 group;
	__u64 aux;
	__u32 pid;
	__u32 tid;
	char comm[16];
};

/* key: struct pair_key; value: struct start_val (start and mid times in
 * ns, who). A hash map: keys are sparse (dev, sector) or thread ids. */
HASH_MAP(starts, struct pair_key, struct start_val, 65536);

/* Matched pairs (struct pair_event), 4 MiB. */
RINGBUF(events, 4 << 20);

/* key: enum pair_counter; value: count (u64), per CPU. */
ENUM_COUNTERS(counters, enum pair_counter, PAIR_NCOUNTERS);

static __always_inline __u64 read_field(void *ctx, __u32 off, __u32 size)
{
	__u64 v = 0;
	/* Field values are little-endian integers of 1, 2, 4 or 8 bytes. */
	switch (size) {
	case 1:
		bpf_probe_read_kernel(&v, 1, ctx + off);
		break;
	case 2:
		bpf_probe_read_kernel(&v, 2, ctx + off);
		break;
	case 4:
		bpf_probe_read_kernel(&v, 4, ctx + off);
		break;
	default:
		bpf_probe_read_kernel(&v, 8, ctx + off);
	}
	return v;
}

static __always_inline void read_key(void *ctx, const volatile __u32 *off, const volatile __u32 *size, struct pair_key *k)
{
	if (nkeys == 0) {
		k->v[0] = (__u32)bpf_get_current_pid_tgid();
		return;
	}
#pragma unroll
	for (int i = 0; i < PAIR_MAX_KEYS; i++) {
		if (i < nkeys)
			k->v[i] = read_field(ctx, off[i], size[i]);
	}
}

/* Start the pair of key k at this event, by the current thread (id):
 * the group and aux fields are read at offsets goff and aoff (sizes gsize
 * and asize, 0: none), *s has the times. */
static __always_inline void begin(void *ctx, struct pair_key *k, struct start_val *s, __u64 id,
				  __u32 goff, __u32 gsize, __u32 aoff, __u32 asize)
{
	s->pid = id >> 32;
	s->tid = (__u32)id;
	if (gsize)
		s->group = read_field(ctx, goff, gsize);
	if (asize)
		s->aux = read_field(ctx, aoff, asize);
	if (want_comm)
		bpf_get_current_comm(&s->comm, sizeof(s->comm));
	if (bpf_map_update_elem(&starts, k, s, BPF_ANY) != 0)
		counter_inc(&counters, PAIR_FULL);
}

SEC("tracepoint")
int on_start(void *ctx)
{
	__u64 id;
	struct pair_key k = {};
	struct start_val s = {};

	if (!current_traced(&id))
		return 0;
	counter_inc(&counters, PAIR_STARTS);
	read_key(ctx, start_off, start_size, &k);
	s.ts = bpf_ktime_get_ns();
	begin(ctx, &k, &s, id, group_off, group_size, aux_off, aux_size);
	return 0;
}

SEC("tracepoint")
int on_mid(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();
	struct pair_key k = {};
	struct start_val *s, n = {};

	read_key(ctx, mid_off, mid_size, &k);
	counter_inc(&counters, PAIR_MIDS);
	s = bpf_map_lookup_elem(&starts, &k);
	if (s) {
		/* A request issued again (requeued) is timed from its last issue. */
		s->mid_ts = now;
		return 0;
	}
	if (!current_traced(&id))
		return 0;
	/* No start: the pair begins here, with what the mid event says. */
	n.mid_ts = now;
	begin(ctx, &k, &n, id, mid_group_off, mid_group_size, mid_aux_off, mid_aux_size);
	return 0;
}

SEC("tracepoint")
int on_end(void *ctx)
{
	struct pair_key k = {};
	struct start_val *s;
	struct pair_event *e;
	__u64 now = bpf_ktime_get_ns();

	read_key(ctx, end_off, end_size, &k);
	s = bpf_map_lookup_elem(&starts, &k);
	if (!s) {
		/* Not ours (another process) or started before tracing. */
		counter_inc(&counters, PAIR_UNMATCHED);
		return 0;
	}
	if (has_mid && s->mid_ts == 0) {
		/* Started, never issued: not a pair of this chain. */
		counter_inc(&counters, PAIR_UNMATCHED);
		bpf_map_delete_elem(&starts, &k);
		return 0;
	}
	counter_inc(&counters, PAIR_ENDS);
	e = ring_reserve(&events, sizeof(*e), &counters, PAIR_DROPS);
	if (!e) {
		bpf_map_delete_elem(&starts, &k);
		return 0;
	}
	__builtin_memcpy(e->key, k.v, sizeof(e->key));
	if (has_mid) {
		e->start_ns = s->mid_ts;
		e->latency_ns = now - s->mid_ts;
		e->before_ns = s->ts ? s->mid_ts - s->ts : PAIR_NO_BEFORE;
	} else {
		e->start_ns = s->ts;
		e->latency_ns = now - s->ts;
		e->before_ns = 0;
	}
	e->group = s->group;
	e->aux = s->aux;
	e->pid = s->pid;
	e->tid = s->tid;
	__builtin_memcpy(e->comm, s->comm, sizeof(e->comm));
	ring_submit(&events, e);
	bpf_map_delete_elem(&starts, &k);
	return 0;
}
