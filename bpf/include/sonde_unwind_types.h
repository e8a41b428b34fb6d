/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Types shared by the user-stack walker (sonde_unwind.h) and its Go
 * loader (internal/collect/unwind, through bpf2go -type in each tool's object).
 * The rule and row layouts are internal/collect/unwindtable's wire form. */
#ifndef SONDE_UNWIND_TYPES_H
#define SONDE_UNWIND_TYPES_H

#define UNWIND_MAX_FRAMES 128   /* user frames per stack (a power of two) */
#define UNWIND_MAX_MAPPINGS 256 /* executable mappings per process (a power of two) */
#define UNWIND_MAPPING_STEPS 9  /* log2(UNWIND_MAX_MAPPINGS) + 1 */
#define UNWIND_ROW_STEPS 25     /* binary search steps: tables up to 2^24 rows */
#define UNWIND_MAX_RULES 65536

/* How to find the caller's frame (unwindtable.Kind). */
enum unwind_kind {
	UNWIND_KIND_NONE = 0,
	UNWIND_KIND_SP = 1,
	UNWIND_KIND_FP = 2,
	UNWIND_KIND_PLT = 3,
	UNWIND_KIND_FP_DEREF = 4,
	UNWIND_KIND_SP_DEREF = 5,
	UNWIND_KIND_SIGNAL = 6,
	UNWIND_KIND_STOP = 7,
	UNWIND_KIND_UNSUPPORTED = 8,
	UNWIND_KIND_FP_SWITCH = 9,
};

/* unwindtable.Flag*; the upper four bits are the deref kinds' addend. */
#define UNWIND_RULE_RA_IN_LR 1
#define UNWIND_RULE_SIGNAL 2
#define UNWIND_RULE_RA_SIGNED 4
#define UNWIND_RULE_FP_UNKNOWN 8

/* unwindtable.Rule: offsets in 8-byte units. */
struct unwind_rule {
	__s16 cfa, fp, ra;
	__u8 kind, flags;
};

/* One row of a table: from pc (an offset the mapping's bias turns into an
 * address) to the next row's pc, rule applies. */
struct unwind_row {
	__u32 pc;
	__u16 rule;
	__u16 unused;
};

/* One executable mapping of a process. A pc in [start, end) looks up
 * pc - bias in rows [row_first, row_first + row_count); row_count 0: no
 * table (frame pointers). Addresses in bytes. */
struct unwind_mapping {
	__u64 start, end;
	__u64 bias;
	__u32 row_first, row_count;
};

/* A process's executable mappings, sorted by start. */
struct unwind_proc {
	__u32 count;
	__u32 unused;
	struct unwind_mapping m[UNWIND_MAX_MAPPINGS];
};

/* Key of unwind_files: a file as the kernel names it (the inode's number
 * and its superblock's device, MKDEV(major, minor) = major << 20 | minor). */
struct unwind_file_key {
	__u64 ino;
	__u32 dev;
	__u32 unused;
};

/* Value of unwind_files: where a file's table is, for a pc of a mapping
 * no process entry names yet. A mapping at file offset moff (bytes) that
 * overlaps the executable segment [off, off + size) looks up pc - (start -
 * moff - delta), delta being the segment's vaddr - off - the table's base. */
struct unwind_file {
	__u64 off, size;
	__u64 delta;
	__u32 row_first, row_count;
};

/* How a walk ended. STOP and ZERO are complete stacks. */
enum unwind_end {
	UNWIND_END_STOP = 0,        /* an outermost frame (_start, thread entry) */
	UNWIND_END_ZERO = 1,        /* a zero return address or frame pointer */
	UNWIND_END_FRAME_LIMIT = 2, /* UNWIND_MAX_FRAMES taken, more remained */
	UNWIND_END_READ = 3,        /* a stack read failed or went the wrong way */
	UNWIND_END_UNSUPPORTED = 4, /* a row the walker cannot follow */
};

/* What a walk went through, as bits of unwind_stack.flags. */
enum unwind_flag {
	UNWIND_F_FALLBACK = 1,     /* frames without unwind info: frame pointers */
	UNWIND_F_NO_MAPPING = 2,   /* a pc outside every mapping loaded for the process */
	UNWIND_F_PROC_UNKNOWN = 4, /* the process was not loaded yet */
};

/* A walked stack: the value of unwind_stacks. */
struct unwind_stack {
	__u32 len; /* frames in pcs */
	__u16 end; /* enum unwind_end */
	__u16 flags; /* enum unwind_flag bits */
	__u64 fallback_pc; /* the first pc walked by frame pointers (names the file) */
	__u64 pcs[UNWIND_MAX_FRAMES]; /* leaf first */
};

/* A file mapping found through the kernel (the executable's range in the
 * address space, other files through bpf_find_vma), kept on its CPU: in
 * interrupt context the helper works once per program run (the mmap
 * lock's release is deferred until the interrupt ends), so a walk reuses
 * what earlier walks of the same address space found. */
struct unwind_vma {
	__u64 start, end, bias; /* the mapping's range, and pc - bias is a row pc */
	__u32 row_first, row_count;
	__u64 off;                   /* the file offset mapped at start */
	struct unwind_file_key file; /* the file mapped (user space names it) */
};

struct unwind_vma_entry {
	__u64 mm; /* the address space (mm_struct address): a new image has another */
	struct unwind_vma vma;
};

/* The dynamic loader's text found at exec (unwind_interps), valid for
 * the address space it was found in. */
struct unwind_interp {
	__u64 mm;
	struct unwind_vma vma;
};

#define UNWIND_VMA_CACHE 8 /* entries per CPU (a power of two) */

/* A row search's answer, kept on its CPU: most frames of most samples
 * (an interpreter's loop, a hot call chain) were looked up before, and a
 * search costs up to 17 reads scattered over a 64K-row table. Keyed by the
 * table-relative pc and the table's run of rows: user space never loads
 * another table at the same run with the same length (unwind.Loader), so
 * an entry cannot outlive its table's meaning. */
struct unwind_row_entry {
	__u64 rel;
	__u32 row_first, row_count;
	__s32 rule; /* the rule index, -1: before the table's first row */
	__u32 unused;
};

#define UNWIND_ROW_CACHE 256 /* entries per CPU (a power of two) */

/* The walk in progress (per CPU). */
struct unwind_state {
	__u64 pc, sp, fp, lr;
	__u64 hash;
	__u64 mm;
	struct unwind_vma_entry vmas[UNWIND_VMA_CACHE];
	struct unwind_row_entry rows[UNWIND_ROW_CACHE];
	/* The mapping of the last frame (frames of one walk mostly stay in
	 * one file): valid for this walk only. */
	__u64 m_start, m_end, m_bias;
	__u32 m_first, m_count;
	bool m_ok;
	__u32 vma_next;
	__u32 pid;
	__u32 s_lo, s_hi; /* a mapping search's bounds (unwind_find_mapping) */
	__u64 vdso_told; /* the address space whose vDSO was last told to user space */
	bool fp_valid; /* fp holds the caller's frame pointer */
	bool exact;    /* pc is exact (innermost or signal-interrupted), not a return address */
	struct unwind_stack out;
};

/* Counters of unwind_counters (per CPU). */
enum unwind_counter {
	UNWIND_C_WALKS = 0,
	UNWIND_C_COMPLETE = 1,
	UNWIND_C_FRAME_LIMIT = 2,
	UNWIND_C_BAD_READ = 3,
	UNWIND_C_UNSUPPORTED = 4,
	UNWIND_C_FALLBACK = 5,    /* walks that used frame pointers somewhere */
	UNWIND_C_NOT_LOADED = 6,  /* walks that met a process or mapping not loaded yet */
	UNWIND_C_STACKS_FULL = 7, /* unwind_stacks full: the user stack is lost */
	UNWIND_C_NOTICES = 8,
	UNWIND_C_NOTICES_LOST = 9, /* ring buffer full */
	UNWIND_C_MAX = 10,
};

/* Why user space should look at a process. */
enum unwind_notice_kind {
	UNWIND_NOTICE_PID = 0,  /* a sample from a process not loaded */
	UNWIND_NOTICE_PC = 1,   /* a pc outside every loaded mapping (a new mmap) */
	UNWIND_NOTICE_EXEC = 2, /* a new image: mappings dropped */
	UNWIND_NOTICE_EXIT = 3, /* the process exited: mappings dropped */
	UNWIND_NOTICE_MAP = 4,  /* a mapping the walker found in the kernel */
	UNWIND_NOTICE_FULL = 5, /* a quarter of unwind_stacks' size walked since the last: drain it */
};

/* A record of unwind_notices. */
struct unwind_notice {
	__u32 pid;
	__u32 kind; /* enum unwind_notice_kind */
	__u64 pc;   /* UNWIND_NOTICE_PC: the address; MAP: the mapping's start */
	/* UNWIND_NOTICE_MAP: the mapping, so a process that ends before user
	 * space reads its /proc entry still has its frames named. */
	__u64 end, off;
	struct unwind_file_key file;
};

#endif
