//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* bio: block I/O latency by stage, kept in the kernel. A request is keyed
 * by its struct request's address, an argument of the typed tracepoints
 * (tp_btf; raw_tp where BTF is missing): no trace record is built and no
 * field read at an offset. Each stage's time goes into a histogram in
 * internal/model/histogram's flat slots, with the exact count, sum,
 * minimum and maximum beside it: nothing crosses to user space per
 * request. biosnoop, which prints every request, pairs the classic
 * tracepoints in internal/tools/pairbpf instead. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "sonde_target.h"
#include "sonde_tp.h"
#include "sonde_hist.h"
#include "bio.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Keep the shared types in BTF for bpf2go -type. */
KEEP_TYPE(struct bio_hist_key, bio_hist_key);
KEEP_TYPE(enum bio_stage, bio_stage);

/* Options set before load: which stages to time, and whether one
 * histogram per disk. */
const volatile bool want_queued = false;
const volatile bool want_device = true;
const volatile bool want_total = false;
const volatile bool per_disk = false;

struct bio_start {
	__u64 insert_ns; /* block_rq_insert, ns; 0: not seen */
	__u64 issue_ns;  /* block_rq_issue, ns; 0: not yet */
};

/* key: the struct request's address (u64); value: struct bio_start (ns).
 * An entry lives from the request's first event to its completion. */
HASH_MAP(starts, __u64, struct bio_start, 16384);

/* One histogram per stage (not split by disk): arrays, whose lookups the
 * verifier turns into an address computation. */

/* key: stage × HIST_SLOTS + slot (u32); value: requests (u64), shared by
 * the CPUs (atomic adds). */
SONDE_MAP(stage_hist, BPF_MAP_TYPE_ARRAY, __u32, __u64, BIO_NSTAGES * HIST_SLOTS);

/* key: stage (u32); value: struct sonde_hist_sums (ns), per CPU. */
PERCPU_ARRAY(stage_sums, struct sonde_hist_sums, BIO_NSTAGES);

/* Per disk (per_disk): hashes. */

/* key: struct bio_hist_key (disk, stage, slot); value: requests (u64). */
HASH_MAP(hist, struct bio_hist_key, __u64, 16384);

/* key: struct bio_group (disk, stage); value: struct sonde_hist_sums (ns),
 * per CPU. */
SONDE_MAP(sums, BPF_MAP_TYPE_PERCPU_HASH, struct bio_group, struct sonde_hist_sums, 256);

/* key: enum bio_counter; value: count (u64), per CPU. */
ENUM_COUNTERS(counters, enum bio_counter, BIO_NCOUNTERS);

/* The kernel's structures, as far as the program reads them (CO-RE). */
struct gendisk {
	int major;
	int first_minor;
} __attribute__((preserve_access_index));

struct request_queue {
	struct gendisk *disk;
} __attribute__((preserve_access_index));

struct request {
	struct request_queue *q;
} __attribute__((preserve_access_index));

/* Kernels before 5.16 named the disk in the request itself. */
struct request___old {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* The request's disk as the block tracepoints' dev field has it. */
static __always_inline __u32 rq_dev(struct request *rq)
{
	struct gendisk *disk;
	if (bpf_core_field_exists(rq->q->disk))
		disk = BPF_CORE_READ(rq, q, disk);
	else
		disk = BPF_CORE_READ((struct request___old *)rq, rq_disk);
	if (!disk)
		return 0;
	return (BPF_CORE_READ(disk, major) << 20) | BPF_CORE_READ(disk, first_minor);
}

/* Count time d of stage for request rq. */
static __always_inline void record(struct request *rq, __u32 stage, __u64 d)
{
	struct sonde_hist_sums zero = {}, *s;

	if (!per_disk) {
		__u32 i = stage * HIST_SLOTS + hist_slot(d);
		__u64 *c = bpf_map_lookup_elem(&stage_hist, &i);
		if (!c) {
			counter_inc(&counters, BIO_LOST_QUEUED + stage);
			return;
		}
		__sync_fetch_and_add(c, 1);
		s = bpf_map_lookup_elem(&stage_sums, &stage);
		if (s)
			hist_sums_add(s, d);
		return;
	}
	struct bio_group g = {.dev = rq_dev(rq), .stage = stage};
	struct bio_hist_key k = {.g = g, .slot = hist_slot(d)};

	if (!map_add(&hist, &k, 1)) {
		counter_inc(&counters, BIO_LOST_QUEUED + stage);
		return;
	}
	s = lookup_or_init(&sums, &g, &zero);
	if (s)
		hist_sums_add(s, d);
}

/* Start timing rq at this event, if the current task is traced. */
static __always_inline void begin(__u64 key, __u64 insert_ns, __u64 issue_ns)
{
	__u64 id;
	struct bio_start s = {.insert_ns = insert_ns, .issue_ns = issue_ns};

	/* Without a pid or cgroup to trace, not even the task is read. */
	if ((target_pid || target_cgroup) && !current_traced(&id))
		return;
	if (bpf_map_update_elem(&starts, &key, &s, BPF_ANY) != 0)
		counter_inc(&counters, BIO_FULL);
}

/* block_rq_insert(struct request *rq): attached only for queued and total. */
TP_BTF_OR_RAW(block_rq_insert, insert)
{
	begin(ctx[0], bpf_ktime_get_ns(), 0);
	return 0;
}

/* block_rq_issue(struct request *rq) */
TP_BTF_OR_RAW(block_rq_issue, issue)
{
	__u64 key = ctx[0], now = bpf_ktime_get_ns();
	struct bio_start *s;

	if (!want_queued && !want_total) {
		/* Device time only: no insert to look up; a requeued request,
		 * issued again, is timed from its last issue. */
		begin(key, 0, now);
		return 0;
	}
	s = bpf_map_lookup_elem(&starts, &key);
	if (!s) {
		/* Not inserted (issued directly) or inserted before tracing. */
		if (want_device || want_total)
			begin(key, 0, now);
		return 0;
	}
	if (!want_queued && !want_device)
		return 0; /* total only: timed from its insert */
	/* A request issued again (requeued) is timed from its last issue. */
	if (want_queued && s->insert_ns && !s->issue_ns)
		record((struct request *)ctx[0], BIO_QUEUED, now - s->insert_ns);
	s->issue_ns = now;
	return 0;
}

/* block_rq_complete(struct request *rq, blk_status_t error, unsigned int nr_bytes) */
TP_BTF_OR_RAW(block_rq_complete, complete)
{
	__u64 key = ctx[0], now = bpf_ktime_get_ns();
	struct request *rq = (struct request *)ctx[0];
	struct bio_start *s = bpf_map_lookup_elem(&starts, &key);

	if (!s) {
		counter_inc(&counters, BIO_UNMATCHED);
		return 0;
	}
	if (want_device && s->issue_ns)
		record(rq, BIO_DEVICE, now - s->issue_ns);
	if (want_total) {
		__u64 t = s->insert_ns ? s->insert_ns : s->issue_ns;
		if (t)
			record(rq, BIO_TOTAL, now - t);
	}
	bpf_map_delete_elem(&starts, &key);
	return 0;
}
