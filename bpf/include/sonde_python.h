/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* CPython frames in the user-stack walk (sonde_unwind.h). For a process
 * user space found to be a CPython (internal/collect/python writes
 * py_procs), each native frame inside the interpreter's eval loop
 * (_PyEval_EvalFrameDefault) is preceded, leaf first, by the Python frames
 * that invocation of the loop runs: the thread's interpreter frames, read
 * from its thread state. Each Python frame is one u64 in the stack's pcs
 * (PY_FRAME_MARK, below): the code object's address and the instruction
 * index, which user space turns into a function, file and line.
 *
 * One Python frame per bpf_loop iteration of the walk, like a native one,
 * so the frame limit and the verifier see one step. Docs:
 * docs/interpreters.md. */
#ifndef SONDE_PYTHON_H
#define SONDE_PYTHON_H

/* A Python frame in unwind_stack.pcs: bit 63 set (no user address has it),
 * bit 62 clear (so no value reaches perf's context marks, >= -4095), bits
 * 48..61 the instruction index + 1 in code units (0: unknown; capped), bits
 * 4..47 the code object's address (CPython's allocators align objects to 16
 * bytes), bits 0..3 its tag (py_tag): user space names the frame from the
 * code object at that address only if its tag is the same, so a code object
 * freed after the sample and another allocated there by the time the name
 * is read is (15 times in 16) not given the newcomer's name. */
#define PY_FRAME_MARK (1ULL << 63)
#define PY_FRAME_INDEX_SHIFT 48
#define PY_FRAME_INDEX_MAX 0x3ffd /* index + 1 below PY_PID_INDEX */
#define PY_FRAME_ADDR_MASK ((1ULL << 48) - 16)
#define PY_FRAME_TAG_MASK 15ULL
/* A stack with Python frames ends with one more value: the index field
 * all ones and the process id below, so user space, which gets stacks
 * without their process, can name the code objects while the process
 * still runs (and two processes' equal code addresses hash apart). */
#define PY_PID_INDEX 0x3fffULL

/* Set before load: no Python frames (--no-interp). */
const volatile bool python_off = false;

#define PY_MAX_THREADS 32 /* thread states searched for the sampled thread */

/* How a version marks the frames one eval-loop invocation runs. */
enum py_style {
	PY_STYLE_FRAME_OBJECT = 0, /* 3.10: one PyFrameObject per invocation, f_lasti an int */
	PY_STYLE_IS_ENTRY = 1,     /* 3.11: the invocation's first frame has is_entry */
	PY_STYLE_CSTACK = 2,       /* 3.12, 3.13: a shim frame owned by the C stack ends them */
};

/* How the sampled thread's state is recognised in the interpreter's list. */
enum py_tid {
	PY_TID_NATIVE = 0,  /* native_thread_id (3.11+): the kernel's thread id */
	PY_TID_PTHREAD = 1, /* thread_id (3.10): pthread_self, the thread pointer (x86-64 fsbase) */
};

#define PY_OWNED_BY_CSTACK 3 /* enum _frameowner, 3.12 and 3.13 */
#define PY_NONE 0xffff       /* an offset the version does not have */

/* Value of py_procs: where a CPython process keeps its state, and the
 * layout of its version (byte offsets, from _Py_DebugOffsets for 3.13+,
 * from sonde's table for 3.10–3.12). */
struct py_proc {
	__u64 runtime;              /* address of _PyRuntime */
	__u64 eval_start, eval_end; /* _PyEval_EvalFrameDefault's code */
	__u8 style;                 /* enum py_style */
	__u8 tid;                   /* enum py_tid */
	__u16 minor;                /* 3.minor */
	__u16 runtime_interp_head;  /* _PyRuntime.interpreters.head */
	__u16 interp_threads_head;  /* PyInterpreterState's first thread state */
	__u16 tstate_next, tstate_tid;
	__u16 tstate_frame;         /* the current frame, or the _PyCFrame holding it */
	__u16 cframe_frame;         /* _PyCFrame.current_frame (3.11, 3.12), else PY_NONE */
	__u16 frame_previous, frame_code, frame_instr;
	__u16 frame_owner;          /* owner (3.12+) or is_entry (3.11) */
	__u16 code_adaptive;        /* co_code_adaptive (3.11+): instruction 0 */
	__u16 code_name, code_filename; /* co_name, co_filename: the frame's tag */
};

/* key: process id (tgid, u32); value: struct py_proc. Written by user
 * space when it finds a CPython in a process (its executable or a
 * libpython), deleted at exec and exit. LRU: a process whose exit was
 * missed ages out. */
SONDE_MAP(py_procs, BPF_MAP_TYPE_LRU_HASH, __u32, struct py_proc, 4096);

/* Bytes of an interpreter frame read at once: every field the walk needs
 * lies in them (3.10's f_lasti at 96 is the farthest). */
#define PY_FRAME_BYTES 104

/* The Python part of the walk in progress (per CPU). */
struct py_walk {
	__u8 buf[PY_FRAME_BYTES]; /* the frame being taken */
	struct py_proc p;
	__u64 frame;   /* the next interpreter frame to take, 0: none left */
	__u64 done_sp; /* the eval-loop frame (its sp) whose Python frames are taken */
	__u8 on;       /* the process is a CPython */
	__u8 found;    /* the thread state was looked up */
	__u32 took;    /* Python frames taken in this walk */
};

/* key: 0 (u32); value: struct py_walk, per CPU. */
PERCPU_ARRAY(py_scratch, struct py_walk, 1);

/* Counters of py_counters (per CPU). */
enum py_counter {
	PY_C_FRAMES = 0,     /* Python frames taken */
	PY_C_NO_THREAD = 1,  /* walks in an eval loop whose thread state was not found */
	PY_C_BAD_READ = 2,   /* a frame that could not be read: the rest of the chain is lost */
	PY_C_MAX = 3,
};

/* key: enum py_counter; value: events (u64), per CPU. */
ENUM_COUNTERS(py_counters, enum py_counter, PY_C_MAX);

struct thread_struct___py {
	unsigned long fsbase;
} __attribute__((preserve_access_index));
struct task_struct___py {
	struct thread_struct___py thread;
} __attribute__((preserve_access_index));

static __always_inline __u64 py_read(__u64 addr)
{
	__u64 v = 0;
	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

/* The tag of a code object (python.Tag in Go): its name and file objects'
 * addresses folded to 4 bits. Taken with the sample, while the frame holds
 * the code object, and compared by user space with the object at the
 * address when it reads the name. */
static __always_inline __u64 py_tag(__u64 code, struct py_proc *p)
{
	__u64 t, pair[2] = {};
	/* co_filename and co_name are neighbours in every version walked:
	 * one read for both (each read costs about as much as the frame's). */
	if (p->code_name == p->code_filename + 8) {
		bpf_probe_read_user(pair, sizeof(pair), (void *)(code + p->code_filename));
		t = pair[0] ^ pair[1];
	} else {
		t = py_read(code + p->code_name) ^ py_read(code + p->code_filename);
	}
	t ^= t >> 32;
	t ^= t >> 16;
	t ^= t >> 8;
	t ^= t >> 4;
	return t & PY_FRAME_TAG_MASK;
}

/* The 8 bytes at off of the frame in w->buf (0 beyond it). */
static __always_inline __u64 py_field(struct py_walk *w, __u16 off)
{
	__u64 v = 0;
	if (off <= PY_FRAME_BYTES - 8)
		__builtin_memcpy(&v, &w->buf[off], 8);
	return v;
}

/* The walk's three entry points (python_begin, python_step, python_end)
 * are global functions: the verifier checks each once, on its own, and
 * the native walk sees only a scalar result. Inlined, the thread search's
 * exits multiplied the states the rest of the walk was verified with
 * (the program passed the verifier's 1M-instruction limit). */

/* Start of a walk: is the current process a CPython? */
__noinline int python_begin(__u32 pid)
{
	__u32 zero = 0;
	struct py_walk *w = bpf_map_lookup_elem(&py_scratch, &zero);
	if (!w)
		return 0;
	w->on = 0;
	if (python_off)
		return 0;
	struct py_proc *p = bpf_map_lookup_elem(&py_procs, &pid);
	if (!p)
		return 0;
	w->p = *p;
	w->on = 1;
	w->found = 0;
	w->frame = 0;
	w->done_sp = 0;
	w->took = 0;
	return 1;
}

/* The sampled thread's current interpreter frame, 0 when its thread
 * state is not among the first PY_MAX_THREADS. */
static __always_inline __u64 python_thread_frame(struct py_proc *p)
{
	__u64 want;
	if (p->tid == PY_TID_PTHREAD) {
		struct task_struct___py *t = (void *)bpf_get_current_task();
		if (!bpf_core_field_exists(t->thread.fsbase))
			return 0;
		want = BPF_CORE_READ(t, thread.fsbase);
	} else {
		want = (__u32)bpf_get_current_pid_tgid();
	}
	__u64 interp = py_read(p->runtime + p->runtime_interp_head);
	if (!interp)
		return 0;
	__u64 ts = py_read(interp + p->interp_threads_head);
	for (int i = 0; i < PY_MAX_THREADS && ts; i++) {
		__u64 id = py_read(ts + p->tstate_tid);
		if (id == want) {
			__u64 f = py_read(ts + p->tstate_frame);
			if (p->cframe_frame != PY_NONE && f)
				f = py_read(f + p->cframe_frame);
			return f;
		}
		ts = py_read(ts + p->tstate_next);
	}
	return 0;
}

/* Called by the walk for each frame before it records the native pc:
 * a Python frame to take instead (the native frame stays current for the
 * next step), 0 for none. pc and sp are the native frame's; exact says pc
 * is not a return address. */
__noinline __u64 python_step(__u64 pc, __u64 sp, __u32 exact)
{
	__u32 zero = 0;
	struct py_walk *w = bpf_map_lookup_elem(&py_scratch, &zero);
	if (!w || !w->on)
		return 0;
	__u64 at = pc - (exact ? 0 : 1);
	if (at < w->p.eval_start || at >= w->p.eval_end || w->done_sp == sp)
		return 0;
	if (!w->found) {
		w->found = 1;
		w->frame = python_thread_frame(&w->p);
		if (!w->frame)
			counter_inc(&py_counters, PY_C_NO_THREAD);
	}
	__u64 f = w->frame;
	if (!f) {
		w->done_sp = sp;
		return 0;
	}
	/* One read for the whole frame; its fields are picked out below. */
	if (bpf_probe_read_user(w->buf, PY_FRAME_BYTES, (void *)f)) {
		counter_inc(&py_counters, PY_C_BAD_READ);
		w->frame = 0;
		w->done_sp = sp;
		return 0;
	}
	__u64 code = py_field(w, w->p.frame_code);
	__u64 prev = py_field(w, w->p.frame_previous);
	if (w->p.style == PY_STYLE_CSTACK && (__u8)py_field(w, w->p.frame_owner) == PY_OWNED_BY_CSTACK) {
		/* The shim the invocation pushed on entry ends its frames. */
		w->frame = prev;
		w->done_sp = sp;
		return 0;
	}
	__u64 index = 0;
	if (w->p.style == PY_STYLE_FRAME_OBJECT) {
		__s32 lasti = (__s32)py_field(w, w->p.frame_instr);
		if (lasti >= 0)
			index = (__u64)lasti + 1;
	} else {
		__u64 instr = py_field(w, w->p.frame_instr);
		__u64 first = code + w->p.code_adaptive;
		if (instr >= first)
			index = (instr - first) / 2 + 1;
	}
	if (index > PY_FRAME_INDEX_MAX + 1)
		index = 0;
	if (!code || (code & PY_FRAME_TAG_MASK)) {
		/* No object CPython allocates lies off a 16-byte boundary. */
		counter_inc(&py_counters, PY_C_BAD_READ);
		w->frame = 0;
		w->done_sp = sp;
		return 0;
	}
	__u64 v = PY_FRAME_MARK | (index << PY_FRAME_INDEX_SHIFT) | (code & PY_FRAME_ADDR_MASK) | py_tag(code, &w->p);
	w->took++;
	w->frame = prev;
	bool last = w->p.style == PY_STYLE_FRAME_OBJECT;
	if (w->p.style == PY_STYLE_IS_ENTRY)
		last = (__u8)py_field(w, w->p.frame_owner) != 0;
	if (last)
		w->done_sp = sp;
	return v;
}

/* End of a walk that took Python frames: the process id as the last
 * value, when there is room (the stack's hash takes it too). */
__noinline int python_end(void)
{
	__u32 zero = 0;
	struct py_walk *w = bpf_map_lookup_elem(&py_scratch, &zero);
	struct unwind_state *st = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!w || !st || !w->on || !w->took)
		return 0;
	__u32 k = PY_C_FRAMES;
	__u64 *c = bpf_map_lookup_elem(&py_counters, &k);
	if (c)
		*c += w->took;
	__u32 n = st->out.len;
	if (n >= UNWIND_MAX_FRAMES)
		return 0;
	__u64 v = PY_FRAME_MARK | (PY_PID_INDEX << PY_FRAME_INDEX_SHIFT) | st->pid;
	st->out.pcs[n & (UNWIND_MAX_FRAMES - 1)] = v;
	st->out.len = n + 1;
	st->hash = unwind_mix(st->hash, v);
	return 1;
}

/* exec and exit: the image is gone. */
static __always_inline void python_forget(__u32 pid)
{
	bpf_map_delete_elem(&py_procs, &pid);
}

#endif
