/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Minimal, architecture-neutral UAPI definitions for sonde's BPF programs.
 * They replace <linux/bpf.h> so the programs build for every target with
 * only clang and libbpf's headers (no per-arch asm/ include directories).
 * Kernel structures, where a program needs them, are declared with
 * preserve_access_index next to the program (CO-RE). */
#ifndef SONDE_BPF_H
#define SONDE_BPF_H

typedef unsigned char __u8;
typedef signed char __s8;
typedef unsigned short __u16;
typedef short __s16;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
#define true 1
#define false 0

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_HASH = 5,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_STACK_TRACE = 7,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_RINGBUF = 27,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};

/* map_flags */
#ifndef BPF_F_NO_PREALLOC
#define BPF_F_NO_PREALLOC (1U << 0)
#endif
#define BPF_F_MMAPABLE (1U << 10)

/* bpf_ringbuf_output flags: wake the reader now (else when it has caught up) */
#define BPF_RB_FORCE_WAKEUP (1ULL << 1)

/* bpf_task_storage_get flags */
#define BPF_LOCAL_STORAGE_GET_F_CREATE 1

/* bpf_map_update_elem flags */
#define BPF_ANY 0
#define BPF_NOEXIST 1
#define BPF_EXIST 2

/* bpf_get_stackid / bpf_get_stack flags */
#define BPF_F_SKIP_FIELD_MASK 0xffULL
#define BPF_F_USER_STACK (1ULL << 8)
#define BPF_F_FAST_STACK_CMP (1ULL << 9)
#define BPF_F_REUSE_STACKID (1ULL << 10)

/* Keep type t in the object's BTF, where bpf2go -type finds it, when no
 * map or function names it (enums, ring-buffer records). */
#define KEEP_TYPE(t, name) const t *unused_##name __attribute__((unused))

#define TASK_COMM_LEN 16
#define MAX_STACK_DEPTH 127

#endif
