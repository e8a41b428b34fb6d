/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* User registers at a uprobe, for one little-endian object that serves
 * amd64, arm64 and arm. The architecture is found through CO-RE: each
 * flavour of struct pt_regs below matches the running kernel's only on
 * its own architecture. The registers are then read at their offsets in
 * pt_regs, which is the ptrace ABI (user_regs_struct on x86-64,
 * user_pt_regs on arm64, uregs on arm) and never changes. Field-offset
 * relocations are avoided on purpose: clang hoists them out of the
 * architecture checks, and the one for a field this kernel lacks is a
 * poisoned instruction the verifier rejects. Include after
 * <bpf/bpf_core_read.h>. */
#ifndef SONDE_REGS_H
#define SONDE_REGS_H

struct pt_regs___x86 {
	unsigned long r14;
} __attribute__((preserve_access_index));

struct pt_regs___arm64 {
	__u64 regs[31];
} __attribute__((preserve_access_index));

struct pt_regs___arm {
	unsigned long uregs[18];
} __attribute__((preserve_access_index));

/* Which architecture the running kernel is (CO-RE constants). */
#define REGS_X86 bpf_core_field_exists(((struct pt_regs___x86 *)0)->r14)
#define REGS_ARM64 bpf_core_field_exists(((struct pt_regs___arm64 *)0)->regs)
#define REGS_ARM bpf_core_field_exists(((struct pt_regs___arm *)0)->uregs)

/* Offsets in struct pt_regs (bytes). */
#define X86_DI 112
#define X86_SI 104
#define X86_DX 96
#define X86_CX 88
#define X86_R8 72
#define X86_R9 64
#define X86_AX 80
#define X86_R14 8
#define X86_BP 32
#define X86_SP 152
#define ARM64_SP 248 /* after regs[31] */
#define ARM64_FP (29 * 8)
#define ARM64_LR (30 * 8)
#define ARM64_G (28 * 8) /* x28: the goroutine, by Go's internal ABI */

/* The 8-byte register at off in pt_regs. */
static __always_inline __u64 reg_at(void *ctx, __u32 off)
{
	__u64 v = 0;
	bpf_probe_read_kernel(&v, sizeof(v), (char *)ctx + (off & 0x3ff));
	return v;
}

/* Integer argument i (0-based, i < 6) by the C calling convention; 0
 * when the architecture passes it on the stack (arm: i >= 4). */
static __always_inline __u64 reg_arg(void *ctx, int i)
{
	if (REGS_X86) {
		switch (i) {
		case 0: return reg_at(ctx, X86_DI);
		case 1: return reg_at(ctx, X86_SI);
		case 2: return reg_at(ctx, X86_DX);
		case 3: return reg_at(ctx, X86_CX);
		case 4: return reg_at(ctx, X86_R8);
		case 5: return reg_at(ctx, X86_R9);
		}
		return 0;
	}
	if (REGS_ARM64)
		return i >= 0 && i < 8 ? reg_at(ctx, i * 8) : 0;
	if (REGS_ARM) {
		__u32 v = 0;
		if (i >= 0 && i < 4)
			bpf_probe_read_kernel(&v, 4, (char *)ctx + i * 4);
		return v;
	}
	return 0;
}

/* The integer return value, at a return probe. */
static __always_inline __u64 reg_ret(void *ctx)
{
	if (REGS_X86)
		return reg_at(ctx, X86_AX);
	return reg_arg(ctx, 0); /* x0 on arm64, r0 on arm */
}

/* The register at x86_off in pt_regs on amd64, at arm64_off on arm64; 0
 * elsewhere. */
static __always_inline __u64 reg_either(void *ctx, __u32 x86_off, __u32 arm64_off)
{
	if (REGS_X86)
		return reg_at(ctx, x86_off);
	if (REGS_ARM64)
		return reg_at(ctx, arm64_off);
	return 0;
}

/* The stack pointer (amd64, arm64; 0 elsewhere). */
static __always_inline __u64 reg_sp(void *ctx) { return reg_either(ctx, X86_SP, ARM64_SP); }

/* The frame pointer (rbp on amd64, x29 on arm64; 0 elsewhere). */
static __always_inline __u64 reg_fp(void *ctx) { return reg_either(ctx, X86_BP, ARM64_FP); }

/* The return address at a function's first instruction: the word at the
 * stack pointer on amd64 (pushed by the call), the link register on arm64;
 * false where it cannot be read. */
static __always_inline bool reg_entry_ret(void *ctx, __u64 *ret)
{
	if (REGS_X86)
		return !bpf_probe_read_user(ret, sizeof(*ret), (void *)reg_at(ctx, X86_SP));
	if (REGS_ARM64) {
		*ret = reg_at(ctx, ARM64_LR);
		return true;
	}
	return false;
}

/* The running goroutine (Go's internal ABI keeps g in r14 on amd64, x28
 * on arm64); false elsewhere. */
static __always_inline bool reg_goroutine(void *ctx, __u64 *g)
{
	*g = reg_either(ctx, X86_R14, ARM64_G);
	return REGS_X86 || REGS_ARM64;
}

#endif
