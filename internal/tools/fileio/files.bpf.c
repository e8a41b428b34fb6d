//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* files: reads and writes of files per process (filetop) and each slow one
 * (fileslower), from the syscall tracepoints, so no kprobe is needed. The
 * entry of read, write, pread64, ... (the raw sys_enter tracepoint, told
 * apart by number) remembers the thread's fd(s) and the time; the exit resolves each fd to its file through the task's file
 * table (CO-RE) and counts the bytes the call returned, or reports the
 * call when it took at least min_ns. A file's path is walked in the kernel
 * once per file (dev, ino) and sent on the ring buffer, so user space can
 * name files of processes that have already exited. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "sonde_target.h"
#include "sonde_task.h"
#include "sonde_tp.h"
#include "sonde_fd.h"
#include "sonde_regs.h"
#include "files.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

KEEP_TYPE(struct files_slow, files_slow);
KEEP_TYPE(enum files_rec_type, files_rec_type);
KEEP_TYPE(enum files_io, files_io);

const volatile bool follow_children = false; /* also target_pid's descendants */
const volatile bool all_files = false; /* false: regular files only */
const volatile bool slow_mode = false; /* false: count (filetop); true: report slow calls */
const volatile __u64 min_ns = 10000000; /* slow_mode: report calls at least this long */
/* By syscall number on this architecture: enum files_io (set before load). */
const volatile __u8 io_kind[FILES_NR_MAX] = {};

#define S_IFMT 00170000
#define S_IFREG 0100000

/* The kernel structures read, relocated by CO-RE (only these fields). */
struct qstr {
	const unsigned char *name;
} __attribute__((preserve_access_index));

struct super_block {
	unsigned int s_dev;
	unsigned long s_magic;
} __attribute__((preserve_access_index));

struct inode {
	unsigned short i_mode;
	unsigned long i_ino;
	struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct dentry {
	struct qstr d_name;
	struct dentry *d_parent;
} __attribute__((preserve_access_index));

struct vfsmount {
	struct dentry *mnt_root;
} __attribute__((preserve_access_index));

struct mount {
	struct mount *mnt_parent;
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
} __attribute__((preserve_access_index));

struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
	struct path f_path;
} __attribute__((preserve_access_index));


/* A call between its entry and exit. */
struct inflight {
	__u64 ts;  /* CLOCK_MONOTONIC ns at the entry */
	int fd_in; /* the fd read from, -1 none */
	int fd_out; /* the fd written to, -1 none */
	__u32 nr;
};

/* key: tid (u32); value: struct inflight, the call it is in. Deleted at
 * the exit; a thread killed inside a call leaves its entry until the tid
 * is reused (then overwritten). */
HASH_MAP(inflight, __u32, struct inflight, 32768);

/* key: struct files_key (pid, dev, ino); value: struct files_stats, calls
 * and bytes since the last interval (user space empties it). */
HASH_MAP(stats, struct files_key, struct files_stats, 16384);

/* key: struct files_key with pid 0 (dev, ino); value: unused (u8). Files
 * whose path was sent on the ring; LRU, so a file evicted is sent again. */
SONDE_MAP(known, BPF_MAP_TYPE_LRU_HASH, struct files_key, __u8, 16384);

/* Paths (struct files_path) and slow calls (struct files_slow). */
RINGBUF(events, 1 << 20);

/* key: enum files_counter; value: count (u64), per CPU. */
ENUM_COUNTERS(counters, enum files_counter, FILES_NCOUNTERS);

/* key: pid (u32) of a descendant of target_pid; value: unused (u8). A
 * traced command's children are traced too (a shell script's work is in
 * its children). */
HASH_MAP(children, __u32, __u8, 8192);

static __always_inline bool traced(__u32 pid)
{
	return pid_traced(pid) || (follow_children && bpf_map_lookup_elem(&children, &pid));
}

/* sched_process_fork(struct task_struct *parent, struct task_struct *child) */
TP_BTF_OR_RAW(sched_process_fork, fork)
{
	struct task_struct *parent = (void *)ctx[0], *child = (void *)ctx[1];
	__u32 ppid = BPF_CORE_READ(parent, tgid), cpid = BPF_CORE_READ(child, tgid);
	if (cpid == ppid || !traced(ppid))
		return 0;
	__u8 one = 1;
	bpf_map_update_elem(&children, &cpid, &one, BPF_ANY);
	return 0;
}

/* sched_process_exit(struct task_struct *p, ...): a process's pid may be
 * reused by one outside the tree. */
TP_BTF_OR_RAW(sched_process_exit, exit)
{
	struct task_struct *t = (void *)ctx[0];
	__u32 pid = BPF_CORE_READ(t, pid), tgid = BPF_CORE_READ(t, tgid);
	if (pid == tgid)
		bpf_map_delete_elem(&children, &tgid);
	return 0;
}

static __always_inline int enter(__u32 nr, int fd_in, int fd_out)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (!traced(id >> 32) || !task_cgroup_traced((void *)bpf_get_current_task()))
		return 0;
	__u32 tid = (__u32)id;
	struct inflight f = {.ts = bpf_ktime_get_ns(), .fd_in = fd_in, .fd_out = fd_out, .nr = nr};
	if (bpf_map_update_elem(&inflight, &tid, &f, BPF_ANY))
		counter_inc(&counters, FILES_LOST_INFLIGHT);
	return 0;
}

/* The kind of syscall nr (enum files_io), FILES_IO_NONE for most. */
static __always_inline __u8 kind_of(long nr)
{
	if ((unsigned long)nr >= FILES_NR_MAX)
		return FILES_IO_NONE;
	return io_kind[nr];
}

/* Every syscall's entry, sys_enter(struct pt_regs *regs, long nr): one
 * raw tracepoint for all of them, where a syscalls:sys_enter_NAME event
 * per syscall made 26 perf events the kernel took 30-80 ms each to remove
 * at exit (a raw tracepoint's link goes at once). The number is checked
 * first, so other calls cost a load and a compare; the arguments are read
 * from the registers (the C convention's first three, as syscalls pass
 * them on amd64 and arm64). */
TP_BTF_OR_RAW(sys_enter, sys_enter)
{
	void *regs = (void *)ctx[0];
	long nr = (long)ctx[1];
	switch (kind_of(nr)) {
	case FILES_IO_READ:
		return enter(nr, (int)reg_arg(regs, 0), -1);
	case FILES_IO_WRITE:
		return enter(nr, -1, (int)reg_arg(regs, 0));
	case FILES_IO_SENDFILE:
		return enter(nr, (int)reg_arg(regs, 1), (int)reg_arg(regs, 0));
	case FILES_IO_SPLICE:
		return enter(nr, (int)reg_arg(regs, 0), (int)reg_arg(regs, 2));
	}
	return 0;
}

/* Offsets in the kernel's struct pt_regs (bytes): x86-64's orig_ax, and
 * arm64's syscallno (an s32 after regs[31], sp, pc, pstate, orig_x0). */
#define X86_ORIG_AX 120
#define ARM64_SYSCALLNO 280

/* The syscall number at its exit, -1 where unknown. */
static __always_inline long exit_nr(void *regs)
{
	if (REGS_X86)
		return (long)reg_at(regs, X86_ORIG_AX);
	if (REGS_ARM64)
		return (__s32)reg_at(regs, ARM64_SYSCALLNO);
	return -1;
}

struct ident {
	struct inode *inode;
	struct files_key key; /* pid 0 */
	__u32 mode;
};

/* The file's identity; false when it is not one to report. */
static __always_inline bool identify(struct file *f, struct ident *id)
{
	/* Through a local: BPF_CORE_READ would relocate id->inode too. */
	struct inode *inode = BPF_CORE_READ(f, f_inode);
	if (!inode)
		return false;
	id->inode = inode;
	id->mode = BPF_CORE_READ(inode, i_mode);
	if (!all_files && (id->mode & S_IFMT) != S_IFREG)
		return false;
	id->key.ino = BPF_CORE_READ_BITFIELD_PROBED(inode, i_ino);
	id->key.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	return true;
}

/* The file behind fd with its identity; NULL when fd names no open file
 * (counted) or one not to report. */
static __always_inline struct file *file_of(int fd, struct ident *id)
{
	struct file *f = fd_file(fd);
	if (!f) {
		counter_inc(&counters, FILES_NO_FILE);
		return NULL;
	}
	return identify(f, id) ? f : NULL;
}

/* key: 0; value: a path being walked (too big for the stack), per CPU. */
SONDE_MAP(scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct files_path, 1);

/* Send a file's path once per (dev, ino): its names up to the root of the
 * process's view of the tree, crossing mount points. A global function, so
 * the verifier checks the walk once rather than at every call site (the
 * arguments are kernel pointers as integers). */
__attribute__((noinline)) int send_path(__u64 file, __u64 inode, __u32 dev, __u64 ino, __u32 mode)
{
	struct files_key key = {.dev = dev, .ino = ino};
	if (bpf_map_lookup_elem(&known, &key))
		return 0;
	__u32 zero = 0;
	struct files_path *p = bpf_map_lookup_elem(&scratch, &zero);
	if (!p)
		return 0;
	struct file *f = (void *)file;
	struct inode *in = (void *)inode;
	struct super_block *sb = BPF_CORE_READ(in, i_sb);
	p->type = FILES_REC_PATH;
	p->dev = dev;
	p->ino = ino;
	p->mode = mode;
	p->magic = BPF_CORE_READ_BITFIELD_PROBED(sb, s_magic);
	p->truncated = 1;
	struct dentry *d = BPF_CORE_READ(f, f_path.dentry);
	struct vfsmount *vm = BPF_CORE_READ(f, f_path.mnt);
	struct mount *m = (void *)vm - bpf_core_field_offset(struct mount, mnt);
	/* The count of names lives in the record and is read back at each
	 * step: a value read from a map is unknown to the verifier, so the
	 * steps share one state and the loop is checked once. Kept in a
	 * register, every count at every step was a state of its own
	 * (775,000 instructions verified: most of filetop's start). */
	volatile __u32 *depth = &p->depth;
	*depth = 0;
	for (int i = 0; i < FILES_PATH_DEPTH + 8; i++) {
		if (d == BPF_CORE_READ(vm, mnt_root)) {
			struct mount *parent = BPF_CORE_READ(m, mnt_parent);
			if (parent == m) { /* the root of the namespace */
				p->truncated = 0;
				break;
			}
			d = BPF_CORE_READ(m, mnt_mountpoint);
			m = parent;
			vm = (void *)m + bpf_core_field_offset(struct mount, mnt);
			continue;
		}
		struct dentry *up = BPF_CORE_READ(d, d_parent);
		if (up == d) { /* a filesystem's root outside any mount: pipes, sockets */
			p->truncated = 0;
			break;
		}
		__u32 n = *depth;
		if (n >= FILES_PATH_DEPTH)
			break;
		bpf_probe_read_kernel_str(p->names[n & (FILES_PATH_DEPTH - 1)], FILES_NAME_LEN, BPF_CORE_READ(d, d_name.name));
		*depth = n + 1;
		d = up;
	}
	/* No wakeup: the reader polls, and the slow record that follows (or
	 * the end of the run) brings the path along. */
	if (bpf_ringbuf_output(&events, p, sizeof(*p), SONDE_RB_NO_WAKEUP)) {
		counter_inc(&counters, FILES_LOST_RING);
		return 0;
	}
	__u8 one = 1;
	bpf_map_update_elem(&known, &key, &one, BPF_ANY);
	return 0;
}

static __always_inline void path_once(struct file *f, struct ident *id)
{
	send_path((__u64)f, (__u64)id->inode, id->key.dev, id->key.ino, id->mode);
}

/* filetop: count one call's bytes on the file behind fd. */
static __always_inline void count(__u64 pidtgid, int fd, bool write, long ret)
{
	struct ident id = {};
	struct file *f = file_of(fd, &id);
	if (!f)
		return;
	struct files_key k = id.key;
	k.pid = pidtgid >> 32;
	struct files_stats *s = bpf_map_lookup_elem(&stats, &k);
	if (!s) {
		struct files_stats zero = {.tid = (__u32)pidtgid, .mode = id.mode};
		bpf_get_current_comm(zero.comm, sizeof(zero.comm));
		s = lookup_or_init(&stats, &k, &zero);
		if (!s) {
			counter_inc(&counters, FILES_LOST_STATS);
			return;
		}
		path_once(f, &id);
	}
	if (write) {
		__sync_fetch_and_add(&s->writes, 1);
		__sync_fetch_and_add(&s->write_bytes, ret);
	} else {
		__sync_fetch_and_add(&s->reads, 1);
		__sync_fetch_and_add(&s->read_bytes, ret);
	}
}

/* fileslower: report one slow call on the file behind fd. */
static __always_inline void report(__u64 pidtgid, int fd, bool write, long ret, struct inflight *in, __u64 d)
{
	struct ident id = {};
	struct file *f = file_of(fd, &id);
	if (!f)
		return;
	path_once(f, &id);
	struct files_slow *e = ring_reserve(&events, sizeof(*e), &counters, FILES_LOST_RING);
	if (!e)
		return;
	e->type = FILES_REC_SLOW;
	e->pid = pidtgid >> 32;
	e->tid = (__u32)pidtgid;
	e->nr = in->nr;
	e->ino = id.key.ino;
	e->dev = id.key.dev;
	e->mode = id.mode;
	e->start_ns = in->ts;
	e->latency_ns = d;
	e->bytes = ret;
	e->write = write;
	e->pad = 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	ring_submit(&events, e);
}

/* Every syscall's exit, sys_exit(struct pt_regs *regs, long ret); those
 * traced are resolved (elsewhere the in-flight map says whether the
 * thread's call was one). Calls that failed are not counted. */
TP_BTF_OR_RAW(sys_exit, exit_io)
{
	long nr = exit_nr((void *)ctx[0]);
	if (nr >= 0 && kind_of(nr) == FILES_IO_NONE)
		return 0;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct inflight in;
	if (!map_take(&inflight, &tid, &in))
		return 0;
	long ret = (long)ctx[1];
	if (ret < 0)
		return 0;
	if (slow_mode) {
		__u64 d = bpf_ktime_get_ns() - in.ts;
		if (d < min_ns)
			return 0;
		if (in.fd_in >= 0)
			report(id, in.fd_in, false, ret, &in, d);
		if (in.fd_out >= 0)
			report(id, in.fd_out, true, ret, &in, d);
		return 0;
	}
	if (in.fd_in >= 0)
		count(id, in.fd_in, false, ret);
	if (in.fd_out >= 0)
		count(id, in.fd_out, true, ret);
	return 0;
}
