/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Map helpers every sonde tool shares: lookup-or-init and per-CPU
 * counters. Include after <bpf/bpf_helpers.h>. */
#ifndef SONDE_MAPS_H
#define SONDE_MAPS_H

/* The value of key in a hash map, inserted as *init when missing; NULL
 * only when the map is full. Two CPUs racing to insert both end up with
 * the one entry (BPF_NOEXIST, then a second lookup). */
static __always_inline void *lookup_or_init(void *map, const void *key, const void *init)
{
	void *v = bpf_map_lookup_elem(map, key);
	if (v)
		return v;
	bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/* Add delta to the u64 value of key, creating it at 0; false when the
 * map is full (the caller counts the loss). */
static __always_inline bool map_add(void *map, const void *key, __u64 delta)
{
	__u64 zero = 0;
	__u64 *v = lookup_or_init(map, key, &zero);
	if (!v)
		return false;
	__sync_fetch_and_add(v, delta);
	return true;
}

/* A map declared in one line: the struct libbpf reads from ".maps". */
#define SONDE_MAP_FLAGS(name, map_type, key_type, value_type, entries, flags) \
	struct {                                                              \
		__uint(type, map_type);                                           \
		__type(key, key_type);                                            \
		__type(value, value_type);                                        \
		__uint(max_entries, entries);                                     \
		__uint(map_flags, flags);                                         \
	} name SEC(".maps")

#define SONDE_MAP(name, map_type, key_type, value_type, entries) \
	SONDE_MAP_FLAGS(name, map_type, key_type, value_type, entries, 0)

/* A hash map of up to entries key → value; every use says what key and
 * value are, with units. */
#define HASH_MAP(name, key_type, value_type, entries) \
	SONDE_MAP(name, BPF_MAP_TYPE_HASH, key_type, value_type, entries)

/* An array of entries values (key: index, u32), one copy per CPU. */
#define PERCPU_ARRAY(name, value_type, entries) \
	SONDE_MAP(name, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, value_type, entries)

/* value_type hung off each task (key: the task): one pointer away, where
 * a hash keyed by tid costs a hashed update and a delete per use. Entries
 * are allocated on first use (task storage cannot be preallocated). */
#define TASK_STORAGE(name, value_type) \
	SONDE_MAP_FLAGS(name, BPF_MAP_TYPE_TASK_STORAGE, int, value_type, 0, BPF_F_NO_PREALLOC)

/* A per-CPU array of n u64 counters (key: counter index, u32; value: count,
 * u64, one per CPU so the hot path never contends; user space sums them). */
#define PERCPU_COUNTERS(name, n) PERCPU_ARRAY(name, __u64, n)

/* PERCPU_COUNTERS keyed by key_enum (an enum type, 4 bytes like a u32):
 * the map's BTF names its counters, so Go reads them by the members' names
 * (bpfskel.Counters) and never repeats the enum. n is the enum's count. */
#define ENUM_COUNTERS(name, key_enum, n) SONDE_MAP(name, BPF_MAP_TYPE_PERCPU_ARRAY, key_enum, __u64, n)

/* Bump counter which of a PERCPU_COUNTERS map (this CPU's copy: no atomics). */
static __always_inline void counter_inc(void *map, __u32 which)
{
	__u64 *v = bpf_map_lookup_elem(map, &which);
	if (v)
		(*v)++;
}

/* A ring buffer of size bytes (a power of two, a multiple of the page
 * size) carrying records to user space (bpfskel.ReadRing). */
#define RINGBUF(name, size)                       \
	struct {                                      \
		__uint(type, BPF_MAP_TYPE_RINGBUF);       \
		__uint(max_entries, size);                \
	} name SEC(".maps")

/* Set by user space when its ring reader has found its ring empty for a
 * while and slowed its polling down (bpfskel's readParked); the next
 * record wakes the reader and clears it. One per object, for every ring in
 * it. */
volatile __u32 ring_reader_idle;

/* Submit a reserved ring record, waking user space only once a batch is
 * waiting, or when the reader is idle. A wakeup per record costs an
 * irq_work per event (a self-IPI, several microseconds under
 * virtualization) and a reader wakeup; the reader (bpfskel.ReadRing)
 * polls every 50 ms while records come, so a busy ring is never stale for
 * longer than that, and sleeps when they stop, to be woken here. */
#define SONDE_RB_NO_WAKEUP (1ULL << 0)
#define SONDE_RB_FORCE_WAKEUP (1ULL << 1)
#define SONDE_RB_AVAIL_DATA 0
#define RING_WAKE_BYTES (256 << 10)
/* The flags for a record about to go into ring (submit or output). */
static __always_inline __u64 ring_flags(void *ring)
{
	if (!ring_reader_idle && bpf_ringbuf_query(ring, SONDE_RB_AVAIL_DATA) < RING_WAKE_BYTES)
		return SONDE_RB_NO_WAKEUP;
	ring_reader_idle = 0;
	return SONDE_RB_FORCE_WAKEUP;
}

static __always_inline void ring_submit(void *ring, void *rec)
{
	bpf_ringbuf_submit(rec, ring_flags(ring));
}

/* A record of size bytes reserved in ring, or NULL when the ring is full:
 * then counter which of counters (PERCPU_COUNTERS) counts the event lost. */
static __always_inline void *ring_reserve(void *ring, __u64 size, void *counters, __u32 which)
{
	void *rec = bpf_ringbuf_reserve(ring, size, 0);
	if (!rec)
		counter_inc(counters, which);
	return rec;
}

/* The lost counters of a tool that keeps each call's entry in flight until
 * its exit, then sends one ring record (execsnoop, opensnoop): the key of
 * its ENUM_COUNTERS map; Go reads them as bpfskel.InFlightLost. */
enum inflight_lost {
	LOST_INFLIGHT, /* calls not reported: the in-flight map was full */
	LOST_RING,     /* calls not reported: the ring buffer was full */
	LOST_COUNTERS,
};

/* Take key's entry out of a hash map: copied to *out and deleted, so the
 * slot is free again before the caller goes on (a thread's in-flight call
 * at its exit); false when there is none. A macro so the copy is of out's
 * own type (aligned word loads, not a byte-wise memcpy of a void *). */
#define map_take(map, key, out)                                 \
	({                                                          \
		typeof(out) map_take_v = bpf_map_lookup_elem(map, key); \
		if (map_take_v) {                                       \
			*(out) = *map_take_v;                               \
			bpf_map_delete_elem(map, key);                      \
		}                                                       \
		map_take_v != NULL;                                     \
	})

#endif
