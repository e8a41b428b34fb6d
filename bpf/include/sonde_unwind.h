/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The user-stack walker: one walk that follows unwind tables compiled from
 * .eh_frame/.debug_frame (internal/collect/unwindtable) where a mapping has them
 * and frame pointers where it has none (JIT code, Go, a file without
 * unwind info). User space (internal/collect/unwind) fills the tables and each
 * traced process's mappings; the walker asks for a process it does not
 * know through a ring buffer. Walked stacks are stored once each in
 * unwind_stacks, keyed by a 64-bit hash of their frames, so a tool's
 * aggregation key stays small and counting stays in the kernel.
 *
 * Include through sonde_stack.h with SONDE_UNWIND defined, after
 * <bpf/bpf_helpers.h> and <bpf/bpf_core_read.h>. Needs bpf_loop and
 * bpf_task_pt_regs (Linux 5.17). Docs: docs/unwinding.md. */
#ifndef SONDE_UNWIND_H
#define SONDE_UNWIND_H

#include "sonde_maps.h"
#include "sonde_tp.h"
#include "sonde_unwind_types.h"

/* The one task field the walker reads (CO-RE). */
struct task_struct___unwind {
	unsigned int flags;
	void *mm;
} __attribute__((preserve_access_index));

/* What the walker reads of a mapping it finds by address (CO-RE). */
struct super_block___unwind {
	__u32 s_dev;
} __attribute__((preserve_access_index));
struct inode___unwind {
	unsigned long i_ino;
	struct super_block___unwind *i_sb;
} __attribute__((preserve_access_index));
struct file___unwind {
	struct inode___unwind *f_inode;
} __attribute__((preserve_access_index));
struct mm_context___unwind {
	void *vdso;
} __attribute__((preserve_access_index));
struct mm_struct___unwind {
	unsigned long start_code, end_code;
	struct file___unwind *exe_file;
	struct mm_context___unwind context;
	unsigned long saved_auxv[2]; /* AT_* pairs; only its offset is used */
} __attribute__((preserve_access_index));
struct vm_area_struct___unwind {
	unsigned long vm_start, vm_end, vm_pgoff;
	struct file___unwind *vm_file;
} __attribute__((preserve_access_index));

#ifndef UNWIND_STACKS_ENTRIES
#define UNWIND_STACKS_ENTRIES 16384
#endif

#define PF_KTHREAD 0x00200000

/* Options set before load (internal/collect/unwind.Consts). unwind_arch 0 turns
 * the walker off: user stacks are then empty. The pt_regs offsets are the
 * architecture's ABI layout (x86-64: sp 152, bp 32, ip 128; arm64: sp
 * 248, x29 232, pc 256, x30 240). */
const volatile __u32 unwind_arch = 0;
const volatile __u32 unwind_off_sp = 0;
const volatile __u32 unwind_off_fp = 0;
const volatile __u32 unwind_off_pc = 0;
const volatile __u32 unwind_off_lr = 0;
/* log2 of the page size: vm_pgoff's unit. */
const volatile __u32 unwind_page_shift = 12;
/* Frames to take, at most UNWIND_MAX_FRAMES; 1 takes the leaf only and
 * asks for no tables (sonde top). */
const volatile __u32 unwind_max_frames = UNWIND_MAX_FRAMES;
/* Least ns between two notices about the same process. */
const volatile __u64 unwind_notice_ns = 50000000;

/* key: rule index (u32); value: struct unwind_rule (8 bytes). The rule
 * dictionary every table's rows point into (a few hundred rules serve
 * every file). Written by user space only. */
SONDE_MAP(unwind_rules, BPF_MAP_TYPE_ARRAY, __u32, struct unwind_rule, UNWIND_MAX_RULES);

/* key: row index (u32); value: struct unwind_row (8 bytes: pc offset,
 * rule index). Every loaded file's table is one sorted run of rows; a
 * mapping names its run (row_first, row_count). max_entries is set by user
 * space before load (rows of every file it may load). */
SONDE_MAP(unwind_rows, BPF_MAP_TYPE_ARRAY, __u32, struct unwind_row, 1);

/* key: struct unwind_file_key (a file's inode and device); value: struct
 * unwind_file (its table's rows and executable segment). Every file whose
 * rows are loaded, so a pc in a mapping that no process entry names yet
 * (a command just exec'd, a library just mapped, a process not loaded)
 * still finds its table through the kernel's own mapping (bpf_find_vma),
 * without waiting for user space. Written by user space only. */
HASH_MAP(unwind_files, struct unwind_file_key, struct unwind_file, 4096);

/* key: process id (tgid, u32); value: struct unwind_proc, the process's
 * executable mappings sorted by start address. Allocated on update (a
 * value is 8 KB; most systems trace far fewer processes than the limit).
 * Deleted here at exec and exit, so stale mappings never serve a new
 * image. */
SONDE_MAP_FLAGS(unwind_procs, BPF_MAP_TYPE_HASH, __u32, struct unwind_proc, 8192, BPF_F_NO_PREALLOC);

/* key: hash of a stack's frames (u64, never 0); value: struct
 * unwind_stack (its frames, leaf first, and how the walk ended). A hash,
 * not the frame array, is the key: tools put it in their own aggregation
 * keys (8 bytes instead of 1 KB) and the kernel hashes 8 bytes per lookup.
 * Two stacks with one 64-bit hash would merge; at 16K stacks the odds are
 * about 1 in 10^11. Allocated on insert: memory follows distinct stacks. */
SONDE_MAP_FLAGS(unwind_stacks, BPF_MAP_TYPE_HASH, __u64, struct unwind_stack,
		UNWIND_STACKS_ENTRIES, BPF_F_NO_PREALLOC);

/* key: 0 (u32); value: the walk in progress (registers and frames), per
 * CPU: a stack is 1 KB, twice the BPF stack. */
PERCPU_ARRAY(unwind_scratch, struct unwind_state, 1);

/* key: enum unwind_counter; value: events (u64), per CPU (Go reads them
 * by name, bpfskel.Counters). */
ENUM_COUNTERS(unwind_counters, enum unwind_counter, UNWIND_C_MAX);

/* struct unwind_notice records to user space: a process to (re)load. */
RINGBUF(unwind_notices, 64 * 1024);

/* key: process id (u32); value: ns of the last notice about it (u64),
 * the rate limit. LRU: forgotten processes age out. */
SONDE_MAP(unwind_noticed, BPF_MAP_TYPE_LRU_HASH, __u32, __u64, 8192);

/* key: process id (tgid, u32); value: struct unwind_interp, the dynamic
 * loader's text as the process's exec left it (address space, range,
 * bias, rows). Written at exec, where the kernel can be asked for any
 * mapping; read by walks in interrupt context, where it can be asked once
 * per run and not at all while the process holds its mmap lock (the
 * loader's own mmap calls). LRU, and deleted at exit. */
SONDE_MAP(unwind_interps, BPF_MAP_TYPE_LRU_HASH, __u32, struct unwind_interp, 8192);

static __always_inline void unwind_notice(__u32 pid, __u32 kind, __u64 pc, bool limit)
{
	__u64 now = bpf_ktime_get_ns();
	if (limit) {
		__u64 *last = bpf_map_lookup_elem(&unwind_noticed, &pid);
		if (last && now - *last < unwind_notice_ns)
			return;
	}
	bpf_map_update_elem(&unwind_noticed, &pid, &now, BPF_ANY);
	struct unwind_notice n = {.pid = pid, .kind = kind, .pc = pc};
	if (bpf_ringbuf_output(&unwind_notices, &n, sizeof(n), 0))
		counter_inc(&unwind_counters, UNWIND_C_NOTICES_LOST);
	else
		counter_inc(&unwind_counters, UNWIND_C_NOTICES);
}

/* Walks machine-wide (one shared counter, added to atomically). Every
 * quarter of unwind_stacks' size of them wakes user space to drain the
 * map (UNWIND_NOTICE_FULL), so its timer need not run while nothing is
 * walked and a burst cannot fill the map between two of its ticks. */
__u64 unwind_walks;

static __always_inline void unwind_count_walk(void)
{
	if ((__sync_fetch_and_add(&unwind_walks, 1) + 1) % (UNWIND_STACKS_ENTRIES / 4))
		return;
	struct unwind_notice n = {.kind = UNWIND_NOTICE_FULL};
	if (bpf_ringbuf_output(&unwind_notices, &n, sizeof(n), BPF_RB_FORCE_WAKEUP))
		counter_inc(&unwind_counters, UNWIND_C_NOTICES_LOST);
	else
		counter_inc(&unwind_counters, UNWIND_C_NOTICES);
}

/* A mapping found in the kernel, for user space to name the process's
 * frames by even if it ends before its /proc entry is read. */
static __always_inline void unwind_notice_map(__u32 pid, struct unwind_vma *c)
{
	struct unwind_notice n = {.pid = pid, .kind = UNWIND_NOTICE_MAP, .pc = c->start,
				  .end = c->end, .off = c->off, .file = c->file};
	if (bpf_ringbuf_output(&unwind_notices, &n, sizeof(n), 0))
		counter_inc(&unwind_counters, UNWIND_C_NOTICES_LOST);
	else
		counter_inc(&unwind_counters, UNWIND_C_NOTICES);
}

/* The most a caller's frame may lie above the current one (bytes): a
 * thread's stack is 8 MB by default, and a frame far bigger than its stack
 * is not one. A frame pointer further up belongs to another stack: a new
 * thread's first frame (Go's runtime.clone in the child) still holds its
 * parent's, whose stack has moved on, and reading it there invents frames. */
#define UNWIND_MAX_FRAME_SPAN (64ULL << 20)

static __always_inline bool unwind_read(__u64 *dst, __u64 addr)
{
	return bpf_probe_read_user(dst, sizeof(*dst), (void *)addr) == 0;
}

/* Move the walk to the caller, whose stack starts at sp and which resumes
 * at ra; false (the walk ends) at a zero return address, the outermost
 * frame's mark. Both ways of stepping (frame pointers, tables) end here. */
static __always_inline bool unwind_to_caller(struct unwind_state *st, __u64 sp, __u64 ra)
{
	st->sp = sp;
	st->pc = ra;
	st->exact = false;
	if (ra == 0) {
		st->out.end = UNWIND_END_ZERO;
		return false;
	}
	return true;
}

/* One frame by the frame-pointer chain: [fp] is the caller's fp, [fp+8]
 * the return address, on x86-64 and arm64 alike. */
static __always_inline bool unwind_fp_step(struct unwind_state *st)
{
	__u64 ra, fp;
	if (st->fp == 0 || !st->fp_valid) {
		st->out.end = st->fp_valid ? UNWIND_END_ZERO : UNWIND_END_READ;
		return false;
	}
	if (st->fp < st->sp || st->fp - st->sp > UNWIND_MAX_FRAME_SPAN ||
	    !unwind_read(&fp, st->fp) || !unwind_read(&ra, st->fp + 8)) {
		st->out.end = UNWIND_END_READ;
		return false;
	}
	__u64 sp = st->fp + 16;
	st->fp = fp;
	return unwind_to_caller(st, sp, ra);
}

/* One frame by the frame-pointer chain in a function that switched stacks
 * (Go's systemstack, asmcgocall, the vDSO calls on g0): its caller's frame
 * lies on the stack it came from, which may be above or below this one, so
 * the caller is not required to lie above. The chain is what the runtime
 * keeps linked across the switch; the frame limit bounds a broken one. */
static __always_inline bool unwind_switch_step(struct unwind_state *st)
{
	__u64 pair[2];
	if (st->fp == 0 || !st->fp_valid) {
		st->out.end = st->fp_valid ? UNWIND_END_ZERO : UNWIND_END_READ;
		return false;
	}
	if (bpf_probe_read_user(pair, sizeof(pair), (void *)st->fp)) {
		st->out.end = UNWIND_END_READ;
		return false;
	}
	__u64 sp = st->fp + 16;
	st->fp = pair[0];
	return unwind_to_caller(st, sp, pair[1]);
}

/* The mapping of pc in p, or NULL: binary search over the sorted starts.
 * The search's bounds live in the walk's state (st->s_lo, st->s_hi) and
 * are read back at every step: a value loaded from a map is one the
 * verifier knows nothing of, so every step starts from the same state and
 * the loop is checked once. Kept in registers, each step's bounds were a
 * new state (the index into p->m makes them precise): 315,000 of the
 * 322,000 instructions the verifier went through for a walk. */
static __always_inline struct unwind_mapping *unwind_find_mapping(struct unwind_state *st, struct unwind_proc *p, __u64 pc)
{
	volatile __u32 *lo = &st->s_lo, *hi = &st->s_hi;
	*lo = 0;
	*hi = p->count < UNWIND_MAX_MAPPINGS ? p->count : UNWIND_MAX_MAPPINGS;
	for (int k = 0; k < UNWIND_MAPPING_STEPS; k++) {
		__u32 l = *lo, h = *hi;
		if (l >= h)
			break;
		__u32 mid = (l + h) / 2;
		if (p->m[mid & (UNWIND_MAX_MAPPINGS - 1)].start <= pc)
			*lo = mid + 1;
		else
			*hi = mid;
	}
	__u32 l = *lo;
	if (l == 0)
		return NULL;
	struct unwind_mapping *m = &p->m[(l - 1) & (UNWIND_MAX_MAPPINGS - 1)];
	if (pc >= m->end)
		return NULL;
	return m;
}

/* The rule index of the last row at or below rel in rows [first,
 * first+count); -1 when rel lies before the first row. A global function
 * of scalars: the verifier checks its 25-step search once per program,
 * not again on every path of the frame step that reaches it. */
__noinline __s64 unwind_find_row(__u32 first, __u32 count, __u64 rel)
{
	__u32 lo = first, hi = first + count;
	for (int k = 0; k < UNWIND_ROW_STEPS; k++) {
		if (lo >= hi)
			break;
		__u32 mid = lo + (hi - lo) / 2;
		struct unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &mid);
		if (!r)
			return -1;
		if (r->pc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == first)
		return -1;
	__u32 at = lo - 1;
	struct unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &at);
	if (!r)
		return -1;
	return r->rule;
}

/* *k gets the key of file f, as unwind_files is keyed (k->unused is the
 * caller's to zero). */
static __always_inline void unwind_file_key_of(struct file___unwind *f, struct unwind_file_key *k)
{
	k->ino = BPF_CORE_READ(f, f_inode, i_ino);
	k->dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
}

/* The loaded table of file f, with its key in *k; NULL when there is no
 * file or its rows are not loaded. */
static __always_inline struct unwind_file *unwind_file_rows(struct file___unwind *f, struct unwind_file_key *k)
{
	if (!f)
		return NULL;
	unwind_file_key_of(f, k);
	return bpf_map_lookup_elem(&unwind_files, k);
}

/* The table of the file behind vma, when its rows are loaded and the
 * mapping overlaps the file's executable segment: true with *c filled. */
static __always_inline bool unwind_vma_table(struct vm_area_struct___unwind *vma, struct unwind_vma *c)
{
	struct unwind_file_key k = {};
	struct unwind_file *uf = unwind_file_rows(BPF_CORE_READ(vma, vm_file), &k);
	if (!uf)
		return false;
	__u64 start = BPF_CORE_READ(vma, vm_start), end = BPF_CORE_READ(vma, vm_end);
	__u64 moff = (__u64)BPF_CORE_READ(vma, vm_pgoff) << (unwind_page_shift & 63);
	if (moff >= uf->off + uf->size || moff + (end - start) <= uf->off)
		return false;
	c->start = start;
	c->end = end;
	c->bias = start - moff - uf->delta;
	c->row_first = uf->row_first;
	c->row_count = uf->row_count;
	c->off = moff;
	c->file = k;
	return true;
}

/* bpf_find_vma callback: the table of the file behind vma, when loaded. */
static long unwind_vma_cb(void *task, struct vm_area_struct___unwind *vma, void *data)
{
	unwind_vma_table(vma, data); /* the rows of the file mapped at pc */
	return 0;
}

/* The executable's text without the mmap lock: the kernel's ELF loader
 * keeps its executable segments' range in the address space (start_code,
 * end_code: the lowest PF_X segment's vaddr + load bias to the highest
 * one's end) and the file in exe_file. user space's unwind_file is the
 * same first PF_X segment, so the bias (load bias + table base) is
 * start_code - off - delta. True with *c filled when pc lies there and
 * the executable's rows are loaded. */
static __always_inline bool unwind_exe_table(struct unwind_state *st, struct unwind_vma *c)
{
	struct mm_struct___unwind *mm = (void *)st->mm;
	__u64 start = BPF_CORE_READ(mm, start_code), end = BPF_CORE_READ(mm, end_code);
	if (st->pc < start || st->pc >= end)
		return false;
	struct unwind_file_key k = {};
	struct unwind_file *uf = unwind_file_rows(BPF_CORE_READ(mm, exe_file), &k);
	if (!uf)
		return false;
	c->start = start;
	c->end = end;
	c->bias = start - uf->off - uf->delta;
	c->row_first = uf->row_first;
	c->row_count = uf->row_count;
	c->off = uf->off;
	c->file = k;
	return true;
}

/* A pc outside the process's loaded mappings: if the kernel maps a file
 * there whose rows are loaded, walk with them at once (the process's
 * entry comes later, from user space). The executable is found through
 * the address space alone (unwind_exe_table); any other file through
 * bpf_find_vma, which in interrupt context and with interrupts off works
 * once per program run: one walk finds the executable and one library,
 * the CPU's cache keeps both for the next walks. */
static __always_inline bool unwind_by_vma(struct unwind_state *st, struct unwind_vma *c)
{
	if (unwind_max_frames <= 1)
		return false;
	for (int i = 0; i < UNWIND_VMA_CACHE; i++) {
		struct unwind_vma_entry *e = &st->vmas[i];
		if (e->mm == st->mm && e->vma.start <= st->pc && st->pc < e->vma.end) {
			*c = e->vma;
			return true;
		}
	}
	c->row_count = 0;
	struct unwind_interp *in = bpf_map_lookup_elem(&unwind_interps, &st->pid);
	if (in && in->mm == st->mm && in->vma.start <= st->pc && st->pc < in->vma.end) {
		*c = in->vma;
	} else if (!unwind_exe_table(st, c)) {
		/* The vDSO has no file (its table comes with the process's
		 * entry): asking the kernel would only spend the one lookup
		 * the next frame, in libc, needs. Its text is a page or two at
		 * mm->context.vdso (x86-64, arm64). */
		struct mm_struct___unwind *mm = (void *)st->mm;
		__u64 vdso = 0;
		if (bpf_core_field_exists(mm->context.vdso)) {
			bpf_core_read(&vdso, sizeof(vdso), &mm->context.vdso);
			if (vdso && st->pc - vdso < (4ULL << (unwind_page_shift & 63))) {
				/* Told once per CPU and address space, as a mapping
				 * with no file: user space names it [vdso] even if the
				 * process ends before its /proc entry is read. */
				if (st->vdso_told != st->mm) {
					st->vdso_told = st->mm;
					struct unwind_vma v = {.start = vdso, .end = vdso + (4ULL << (unwind_page_shift & 63))};
					unwind_notice_map(st->pid, &v);
				}
				return false;
			}
		}
		bpf_find_vma(bpf_get_current_task_btf(), st->pc, unwind_vma_cb, c, 0);
		if (c->row_count == 0)
			return false;
	}
	unwind_notice_map(st->pid, c);
	struct unwind_vma_entry *e = &st->vmas[st->vma_next++ & (UNWIND_VMA_CACHE - 1)];
	e->mm = st->mm;
	e->vma = *c;
	return true;
}

static __always_inline struct unwind_state *unwind_scratch_state(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&unwind_scratch, &zero);
}

/* Find the table of this CPU's walk's pc and keep it as the walk's
 * current mapping (st->m_*): 0 when found, 1 when the walk goes on by
 * frame pointers here (the flags say why), -1 without the walk's state.
 * A global function: the verifier checks the search once per program,
 * not once for every way the frame step below goes on. */
__noinline int unwind_locate(void)
{
	struct unwind_state *st = unwind_scratch_state();
	if (!st)
		return -1;
	struct unwind_vma found;
	struct unwind_proc *p = bpf_map_lookup_elem(&unwind_procs, &st->pid);
	struct unwind_mapping *m = p ? unwind_find_mapping(st, p, st->pc) : NULL;
	if (m) {
		st->m_start = m->start;
		st->m_end = m->end;
		st->m_bias = m->bias;
		st->m_first = m->row_first;
		st->m_count = m->row_count;
	} else if (unwind_by_vma(st, &found)) {
		if (p && unwind_max_frames > 1)
			unwind_notice(st->pid, UNWIND_NOTICE_PC, st->pc, true);
		st->m_start = found.start;
		st->m_end = found.end;
		st->m_bias = found.bias;
		st->m_first = found.row_first;
		st->m_count = found.row_count;
	} else if (!p) {
		st->out.flags |= UNWIND_F_PROC_UNKNOWN;
		return 1;
	} else {
		if (!(st->out.flags & UNWIND_F_NO_MAPPING) && unwind_max_frames > 1)
			unwind_notice(st->pid, UNWIND_NOTICE_PC, st->pc, true);
		st->out.flags |= UNWIND_F_NO_MAPPING;
		if (!st->out.fallback_pc)
			st->out.fallback_pc = st->pc; /* the first: where the tables ran out */
		return 1;
	}
	st->m_ok = true;
	return 0;
}

/* Unwind one frame of this CPU's walk by the table of its current
 * mapping (unwind_locate); false ends the walk (st->out.end says why). A
 * global function, like unwind_locate: each is verified once, instead of
 * every path of one through every path of the other. */
__noinline int unwind_apply(void)
{
	struct unwind_state *st = unwind_scratch_state();
	if (!st)
		return 0;
	__u64 bias = st->m_bias;
	__u32 row_first = st->m_first, row_count = st->m_count;
	if (row_count == 0) {
		st->out.flags |= UNWIND_F_FALLBACK;
		if (!st->out.fallback_pc)
			st->out.fallback_pc = st->pc; /* the first: where the tables ran out */
		return unwind_fp_step(st);
	}
	/* A return address points after its call; the call itself may be a
	 * function's last instruction, so look up ra-1. */
	__u64 rel = st->pc - bias - (st->exact ? 0 : 1);
	__s64 ri;
	struct unwind_row_entry *ce = &st->rows[(rel ^ (rel >> 9) ^ row_first) & (UNWIND_ROW_CACHE - 1)];
	if (ce->rel == rel && ce->row_first == row_first && ce->row_count == row_count) {
		ri = ce->rule;
	} else {
		ri = unwind_find_row(row_first, row_count, rel);
		ce->rel = rel;
		ce->row_first = row_first;
		ce->row_count = row_count;
		ce->rule = ri;
	}
	struct unwind_rule *rule = NULL;
	if (ri >= 0) {
		__u32 k = (__u32)ri;
		rule = bpf_map_lookup_elem(&unwind_rules, &k);
	}
	if (!rule || rule->kind == UNWIND_KIND_NONE) {
		st->out.flags |= UNWIND_F_FALLBACK;
		if (!st->out.fallback_pc)
			st->out.fallback_pc = st->pc; /* the first: where the tables ran out */
		return unwind_fp_step(st);
	}
	__u8 kind = rule->kind;
	__u8 flags = rule->flags;
	__s64 cfa_off = (__s64)rule->cfa * 8;
	__s64 fp_off = (__s64)rule->fp * 8;
	__s64 ra_off = (__s64)rule->ra * 8;
	__u64 cfa, ra = 0, v;

	switch (kind) {
	case UNWIND_KIND_STOP:
		st->out.end = UNWIND_END_STOP;
		return false;
	case UNWIND_KIND_SIGNAL: {
		__u64 sp = st->sp, pc, fp;
		if (!unwind_read(&v, sp + cfa_off) || !unwind_read(&pc, sp + ra_off) || !unwind_read(&fp, sp + fp_off)) {
			st->out.end = UNWIND_END_READ;
			return false;
		}
		st->sp = v;
		st->pc = pc;
		st->fp = fp;
		st->fp_valid = true;
		st->exact = true; /* the interrupted pc, not a return address */
		return pc != 0;
	}
	case UNWIND_KIND_FP_SWITCH:
		return unwind_switch_step(st);
	case UNWIND_KIND_SP:
		cfa = st->sp + cfa_off;
		break;
	case UNWIND_KIND_PLT:
		cfa = st->sp + cfa_off + ((st->pc & 15) >= (__u64)rule->fp ? 8 : 0);
		fp_off = 0; /* fp holds the threshold: no PLT stub saves the FP */
		break;
	case UNWIND_KIND_FP:
	case UNWIND_KIND_FP_DEREF:
		if (!st->fp_valid) {
			st->out.end = UNWIND_END_READ;
			return false;
		}
		cfa = st->fp + cfa_off;
		break;
	case UNWIND_KIND_SP_DEREF:
		cfa = st->sp + cfa_off;
		break;
	default:
		st->out.end = UNWIND_END_UNSUPPORTED;
		return false;
	}
	if (kind == UNWIND_KIND_FP_DEREF || kind == UNWIND_KIND_SP_DEREF) {
		if (!unwind_read(&v, cfa)) {
			st->out.end = UNWIND_END_READ;
			return false;
		}
		cfa = v + (__u64)(flags >> 4) * 8;
	}
	if (flags & UNWIND_RULE_RA_IN_LR) {
		/* Only the interrupted frame can still hold it in x30. */
		if (st->out.len != 1) {
			st->out.end = UNWIND_END_UNSUPPORTED;
			return false;
		}
		ra = st->lr;
	} else if (fp_off != 0 && fp_off == ra_off - 8) {
		/* The saved FP just below the return address (x86-64's push
		 * rbp, arm64's stp x29, x30): one read for both. */
		__u64 pair[2];
		if (bpf_probe_read_user(pair, sizeof(pair), (void *)(cfa + fp_off))) {
			st->out.end = UNWIND_END_READ;
			return false;
		}
		st->fp = pair[0];
		st->fp_valid = true;
		ra = pair[1];
		fp_off = 0; /* read */
	} else if (!unwind_read(&ra, cfa + ra_off)) {
		st->out.end = UNWIND_END_READ;
		return false;
	}
	if (flags & UNWIND_RULE_RA_SIGNED)
		ra &= 0x0000ffffffffffffULL; /* strip the pointer authentication code */
	if (fp_off != 0) {
		if (unwind_read(&v, cfa + fp_off)) {
			st->fp = v;
			st->fp_valid = true;
		} else {
			st->fp_valid = false;
		}
	}
	if (flags & UNWIND_RULE_FP_UNKNOWN)
		st->fp_valid = false;
	if (cfa < st->sp || (cfa == st->sp && !(flags & UNWIND_RULE_RA_IN_LR)) || cfa - st->sp > UNWIND_MAX_FRAME_SPAN) {
		/* The stack grows down: a caller's frame lies above (at an arm64
		 * function's entry, where x30 still holds the return address,
		 * the caller's SP is the same), and on the same stack. */
		st->out.end = UNWIND_END_READ;
		return false;
	}
	return unwind_to_caller(st, cfa, ra);
}

static __always_inline __u64 unwind_mix(__u64 h, __u64 v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

#ifndef SONDE_NO_PYTHON
#include "sonde_python.h" /* CPython frames at the eval loop's frames */
#endif

/* Record the current frame of this CPU's walk, then unwind one: 0 to go
 * on, 1 when the walk ended. py_on: the process is a CPython
 * (sonde_python.h). A global function: the verifier checks it once per
 * program, from no caller's state. Inlined in bpf_loop's callback, the
 * whole frame step was verified again for every state the loop's
 * convergence check tried (most of a tool's load time). */
__noinline int unwind_walk_frame(int py_on)
{
	struct unwind_state *st = unwind_scratch_state();
	if (!st)
		return 1;
	__u32 n = st->out.len;
	if (n >= UNWIND_MAX_FRAMES || n >= unwind_max_frames) {
		st->out.end = UNWIND_END_FRAME_LIMIT;
		return 1;
	}
#ifndef SONDE_NO_PYTHON
	__u64 py = py_on ? python_step(st->pc, st->sp, st->exact) : 0;
	if (py) {
		/* A Python frame the eval loop at pc runs: taken first, the
		 * native frame stays current for the next step. */
		st->out.pcs[n & (UNWIND_MAX_FRAMES - 1)] = py;
		st->out.len = n + 1;
		st->hash = unwind_mix(st->hash, py);
		return 0;
	}
#endif
	st->out.pcs[n & (UNWIND_MAX_FRAMES - 1)] = st->pc;
	st->out.len = n + 1;
	st->hash = unwind_mix(st->hash, st->pc);
	/* Frames of one walk mostly stay in one file: the last frame's
	 * mapping first. */
	if (!(st->m_ok && st->m_start <= st->pc && st->pc < st->m_end)) {
		int r = unwind_locate();
		if (r < 0)
			return 1;
		if (r > 0)
			return unwind_fp_step(st) ? 0 : 1;
	}
	return unwind_apply() ? 0 : 1;
}

/* bpf_loop body: one frame. The verifier wants 0 or 1 back, and knows
 * nothing of a global function's result but its type. ctx points to a
 * byte saying the process is a CPython. */
static long unwind_step(__u32 i, void *ctx)
{
	return unwind_walk_frame(ctx && *(__u8 *)ctx) ? 1 : 0;
}

/* Walk the current task's user stack into unwind_stacks. Returns the
 * stack's key (its hash), or 0 when there is no user stack to take (a
 * kernel thread, the walker off on this architecture). */
static __always_inline __u64 unwind_user_stack(void)
{
	__u32 zero = 0;
	if (!unwind_arch)
		return 0;
	struct task_struct___unwind *t = (void *)bpf_get_current_task();
	if (BPF_CORE_READ(t, flags) & PF_KTHREAD)
		return 0;
	struct unwind_state *st = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!st)
		return 0;
	long regs = bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs)
		return 0;
	if (bpf_probe_read_kernel(&st->pc, 8, (void *)(regs + unwind_off_pc)) ||
	    bpf_probe_read_kernel(&st->sp, 8, (void *)(regs + unwind_off_sp)) ||
	    bpf_probe_read_kernel(&st->fp, 8, (void *)(regs + unwind_off_fp)))
		return 0;
	st->lr = 0;
	if (unwind_off_lr)
		bpf_probe_read_kernel(&st->lr, 8, (void *)(regs + unwind_off_lr));
	if (st->pc == 0)
		return 0;
	st->pid = bpf_get_current_pid_tgid() >> 32;
	st->mm = (__u64)BPF_CORE_READ(t, mm);
	st->m_ok = false;
	st->fp_valid = true;
	st->exact = true; /* the innermost pc was interrupted, not returned to */
	st->hash = 0xcbf29ce484222325ULL;
	st->out.len = 0;
	st->out.end = UNWIND_END_FRAME_LIMIT;
	st->out.flags = 0;
	st->out.fallback_pc = 0;
	if (unwind_max_frames > 1 && !bpf_map_lookup_elem(&unwind_procs, &st->pid))
		unwind_notice(st->pid, UNWIND_NOTICE_PID, 0, true);
	__u8 py_on = 0;
#ifndef SONDE_NO_PYTHON
	if (unwind_max_frames > 1)
		py_on = python_begin(st->pid);
#endif
	bpf_loop((unwind_max_frames < UNWIND_MAX_FRAMES ? unwind_max_frames : UNWIND_MAX_FRAMES) + 1, unwind_step, &py_on, 0);
#ifndef SONDE_NO_PYTHON
	if (py_on)
		python_end();
#endif

	counter_inc(&unwind_counters, UNWIND_C_WALKS);
	unwind_count_walk();
	switch (st->out.end) {
	case UNWIND_END_STOP:
	case UNWIND_END_ZERO:
		counter_inc(&unwind_counters, UNWIND_C_COMPLETE);
		break;
	case UNWIND_END_FRAME_LIMIT:
		counter_inc(&unwind_counters, UNWIND_C_FRAME_LIMIT);
		break;
	case UNWIND_END_UNSUPPORTED:
		counter_inc(&unwind_counters, UNWIND_C_UNSUPPORTED);
		break;
	default:
		counter_inc(&unwind_counters, UNWIND_C_BAD_READ);
	}
	if (st->out.flags & UNWIND_F_FALLBACK)
		counter_inc(&unwind_counters, UNWIND_C_FALLBACK);
	if (st->out.flags & (UNWIND_F_NO_MAPPING | UNWIND_F_PROC_UNKNOWN))
		counter_inc(&unwind_counters, UNWIND_C_NOT_LOADED);

	__u64 h = unwind_mix(st->hash, st->out.len);
	if (h == 0)
		h = 1;
	if (!bpf_map_lookup_elem(&unwind_stacks, &h)) {
		/* -E2BIG: full; -ENOMEM: the entry could not be allocated here
		 * (in interrupt context); -EEXIST: another CPU stored it first,
		 * which is no loss. A stack not stored is counted, and its key
		 * not given out: it would name nothing. */
		long err = bpf_map_update_elem(&unwind_stacks, &h, &st->out, BPF_NOEXIST);
		if (err && err != -17 /* -EEXIST */) {
			counter_inc(&unwind_counters, UNWIND_C_STACKS_FULL);
			return 0;
		}
	}
	return h;
}

/* The walker's bookkeeping of processes: a new image drops the old
 * mappings at once (the next sample asks for the new ones), an exit frees
 * them. */
/* bpf_find_vma callback: the key of the file behind vma (none: ino 0). */
static long unwind_file_cb(void *task, struct vm_area_struct___unwind *vma, void *data)
{
	struct file___unwind *f = BPF_CORE_READ(vma, vm_file);
	if (f)
		unwind_file_key_of(f, data);
	return 0;
}

#define UNWIND_AUXV_WORDS 48 /* AT_BASE comes ninth or so of about 20 pairs */
#define UNWIND_AT_BASE 7

/* At exec the dynamic loader is mapped and nothing else of the new image
 * is: find its text (its base from the auxiliary vector the kernel saved,
 * its file from the mapping there, its text from the file's rows) while
 * the kernel can be asked, and keep it for the walks of the process's
 * first milliseconds. */
static __always_inline void unwind_keep_interp(__u32 pid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct___unwind *mm = (void *)BPF_CORE_READ((struct task_struct___unwind *)task, mm);
	if (!mm || !bpf_core_field_exists(mm->saved_auxv))
		return;
	__u64 auxv[UNWIND_AUXV_WORDS];
	if (bpf_probe_read_kernel(auxv, sizeof(auxv), (void *)mm + bpf_core_field_offset(mm->saved_auxv)))
		return;
	__u64 base = 0;
	for (int i = 0; i + 1 < UNWIND_AUXV_WORDS; i += 2) {
		if (auxv[i] == 0)
			break; /* AT_NULL */
		if (auxv[i] == UNWIND_AT_BASE) {
			base = auxv[i + 1];
			break;
		}
	}
	if (!base)
		return; /* a static executable: no loader */
	struct unwind_file_key k = {};
	bpf_find_vma(task, base, unwind_file_cb, &k, 0);
	struct unwind_file *uf = k.ino ? bpf_map_lookup_elem(&unwind_files, &k) : NULL;
	if (!uf)
		return; /* its rows are not loaded: the walk asks the kernel later */
	/* Where the text lies if the loader's first segment is at offset 0
	 * of its file and vaddr 0, as ld.so's is; the mapping found there
	 * says exactly, or nothing. */
	struct unwind_interp in = {.mm = (__u64)mm};
	bpf_find_vma(task, base + uf->off + uf->delta, unwind_vma_cb, &in.vma, 0);
	if (in.vma.row_count)
		bpf_map_update_elem(&unwind_interps, &pid, &in, BPF_ANY);
}

TP_BTF_OR_RAW(sched_process_exec, unwind_exec)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	bpf_map_delete_elem(&unwind_procs, &pid);
	bpf_map_delete_elem(&unwind_interps, &pid);
#ifndef SONDE_NO_PYTHON
	python_forget(pid);
#endif
	if (unwind_max_frames > 1)
		unwind_keep_interp(pid);
	unwind_notice(pid, UNWIND_NOTICE_EXEC, 0, false);
	/* No rate limit on the first notice after exec: the dynamic loader
	 * maps the libraries after this one is read, and the first sample in
	 * one of them should ask for it at once, not 50 ms later. */
	bpf_map_delete_elem(&unwind_noticed, &pid);
	return 0;
}

TP_BTF_OR_RAW(sched_process_exit, unwind_exit)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32;
	if (pid != (__u32)id)
		return 0; /* a thread, not the process */
	bpf_map_delete_elem(&unwind_interps, &pid);
#ifndef SONDE_NO_PYTHON
	python_forget(pid);
#endif
	if (bpf_map_delete_elem(&unwind_procs, &pid) == 0)
		unwind_notice(pid, UNWIND_NOTICE_EXIT, 0, false);
	bpf_map_delete_elem(&unwind_noticed, &pid);
	return 0;
}

#endif
