/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* sonde's in-process function-graph recorder. Loaded with LD_PRELOAD into
 * a program built with -finstrument-functions, it receives the compiler's
 * __cyg_profile_func_enter/exit calls; in one built with -pg (amd64), its
 * mcount calls, and it catches the return by swapping the function's
 * return address for a trampoline (below). Either way it keeps a
 * per-thread stack of entry times and, at each return that passes sonde's
 * depth and duration filters, writes one completed call into a
 * shared-memory ring that sonde drains (ring.h). No system call on the hot path: the clock is the
 * vDSO's, the thread id is cached per thread. Nothing here is
 * instrumented itself (built without -finstrument-functions, and every
 * function is marked no_instrument_function besides). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "ring.h"

#define NOINST __attribute__((no_instrument_function))
#define EXPORT __attribute__((no_instrument_function, visibility("default")))
#define STACK 128

static struct ring_header *hdr;
static struct ring_call *calls;

struct frame {
	uint64_t fn, start;
	uint64_t ret; /* -pg: the return address the trampoline stands in for */
	uint64_t loc; /* -pg: where on the stack that return address was */
};
#define TLS __thread __attribute__((tls_model("initial-exec")))
static TLS struct frame stack[STACK];
static TLS uint32_t depth;
static TLS uint32_t tid;

static NOINST uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static NOINST int find_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uint64_t *)data = info->dlpi_addr; /* the first object is the executable */
	return 1;
}

__attribute__((constructor, no_instrument_function)) static void attach(void)
{
	const char *path = getenv("SONDE_FTRACE_RING");
	if (!path)
		return;
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	if (fstat(fd, &st) == 0 && (size_t)st.st_size > sizeof(struct ring_header)) {
		void *m = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED && ((struct ring_header *)m)->magic == RING_MAGIC) {
			struct ring_header *h = m;
			uint64_t bias = 0;
			dl_iterate_phdr(find_bias, &bias);
			h->load_bias = bias;
			calls = (struct ring_call *)(h + 1);
			__atomic_store_n(&h->attached, 1, __ATOMIC_RELEASE);
			hdr = h;
		}
	}
	close(fd);
	/* Children must not write into this program's ring. */
	unsetenv("LD_PRELOAD");
	unsetenv("SONDE_FTRACE_RING");
}

static NOINST void put(uint64_t fn, uint64_t start, uint64_t dur, uint32_t d, uint16_t flags)
{
	uint64_t slot = __atomic_load_n(&hdr->head, __ATOMIC_RELAXED);
	do {
		if (slot - __atomic_load_n(&hdr->tail, __ATOMIC_ACQUIRE) >= hdr->slots) {
			__atomic_fetch_add(&hdr->lost, 1, __ATOMIC_RELAXED);
			return;
		}
	} while (!__atomic_compare_exchange_n(&hdr->head, &slot, slot + 1, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	struct ring_call *c = &calls[slot & (hdr->slots - 1)];
	if (!tid)
		tid = (uint32_t)syscall(SYS_gettid);
	c->start_ns = start;
	c->dur_ns = dur;
	c->fn = fn;
	c->tid = tid;
	c->depth = (uint16_t)d;
	c->flags = flags;
	__atomic_store_n(&c->seq, slot + 1, __ATOMIC_RELEASE);
}

EXPORT void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)site;
	if (!hdr)
		return;
	uint32_t d = depth++;
	if (d >= STACK) {
		__atomic_fetch_add(&hdr->overflow, 1, __ATOMIC_RELAXED);
		return;
	}
	stack[d].fn = (uint64_t)(uintptr_t)fn;
	stack[d].start = now_ns();
}

EXPORT void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	if (!hdr || depth == 0)
		return;
	uint64_t end = now_ns();
	uint32_t d = --depth;
	if (d >= STACK || stack[d].fn != (uint64_t)(uintptr_t)fn)
		return;
	uint64_t dur = end - stack[d].start;
	if ((hdr->max_depth && d >= hdr->max_depth) || dur < hdr->min_dur_ns)
		return;
	put((uint64_t)(uintptr_t)fn, stack[d].start, dur, d, 0);
}

/* At exit, the calls still running on this thread (main, usually) are
 * written as unfinished. */
__attribute__((destructor, no_instrument_function)) static void detach(void)
{
	if (!hdr)
		return;
	uint64_t end = now_ns();
	for (uint32_t d = 0; d < depth && d < STACK; d++)
		put(stack[d].fn, stack[d].start, end - stack[d].start, d, 2);
	depth = 0;
}

#if defined(__x86_64__)
/* -pg on amd64: every function calls mcount right after its prologue
 * (push %rbp; mov %rsp,%rbp), so its return address is at 8(%rbp). mcount
 * saves the argument registers (integer and vector: the function has not
 * read its arguments yet), records the entry, and replaces that return
 * address with sonde_mcount_return, which records the return and jumps
 * to the real one. The C side never fails to pop what it pushed: a frame
 * is only swapped when there is room on the stack. */
EXPORT void mcount(void);
void sonde_mcount_return(void);

NOINST __attribute__((used)) void sonde_mcount_entry(uint64_t *parent_loc, uint64_t self)
{
	if (!hdr || depth >= STACK)
		return;
	uint32_t d = depth++;
	stack[d].fn = self; /* an address inside the function: sonde maps it to its symbol */
	stack[d].ret = *parent_loc;
	stack[d].loc = (uint64_t)(uintptr_t)parent_loc;
	stack[d].start = now_ns();
	*parent_loc = (uint64_t)(uintptr_t)sonde_mcount_return;
}

/* sp is the stack pointer the function returned with, just above the
 * slot its return address was in. Frames below it were left by longjmp
 * (or an exception) without returning: they are dropped, so the right
 * return address is always the one given back. */
NOINST __attribute__((used)) uint64_t sonde_mcount_exit(uint64_t sp)
{
	uint64_t end = now_ns();
	while (depth > 1 && stack[depth - 1].loc != sp - 8)
		depth--;
	uint32_t d = --depth;
	struct frame *f = &stack[d];
	uint64_t dur = end - f->start;
	if (!((hdr->max_depth && d >= hdr->max_depth) || dur < hdr->min_dur_ns))
		put(f->fn, f->start, dur, d, 0);
	return f->ret;
}

__asm__(
	".text\n"
	".globl mcount\n"
	".type mcount, @function\n"
	"mcount:\n"
	"	push %rdi\n	push %rsi\n	push %rdx\n	push %rcx\n	push %r8\n	push %r9\n	push %rax\n"
	"	sub $128, %rsp\n"
	"	movdqu %xmm0, 0(%rsp)\n	movdqu %xmm1, 16(%rsp)\n	movdqu %xmm2, 32(%rsp)\n	movdqu %xmm3, 48(%rsp)\n"
	"	movdqu %xmm4, 64(%rsp)\n	movdqu %xmm5, 80(%rsp)\n	movdqu %xmm6, 96(%rsp)\n	movdqu %xmm7, 112(%rsp)\n"
	"	lea 8(%rbp), %rdi\n"
	"	mov 184(%rsp), %rsi\n" /* mcount's return address: inside the function */
	"	call sonde_mcount_entry\n"
	"	movdqu 0(%rsp), %xmm0\n	movdqu 16(%rsp), %xmm1\n	movdqu 32(%rsp), %xmm2\n	movdqu 48(%rsp), %xmm3\n"
	"	movdqu 64(%rsp), %xmm4\n	movdqu 80(%rsp), %xmm5\n	movdqu 96(%rsp), %xmm6\n	movdqu 112(%rsp), %xmm7\n"
	"	add $128, %rsp\n"
	"	pop %rax\n	pop %r9\n	pop %r8\n	pop %rcx\n	pop %rdx\n	pop %rsi\n	pop %rdi\n"
	"	ret\n"
	".size mcount, .-mcount\n"
	".globl sonde_mcount_return\n"
	".hidden sonde_mcount_return\n"
	".type sonde_mcount_return, @function\n"
	"sonde_mcount_return:\n"
	"	sub $8, %rsp\n" /* the real return address goes here */
	"	push %rax\n	push %rdx\n"
	"	sub $40, %rsp\n"
	"	movdqu %xmm0, 0(%rsp)\n	movdqu %xmm1, 16(%rsp)\n"
	"	lea 64(%rsp), %rdi\n" /* the stack pointer at the return */
	"	call sonde_mcount_exit\n"
	"	mov %rax, 56(%rsp)\n"
	"	movdqu 0(%rsp), %xmm0\n	movdqu 16(%rsp), %xmm1\n"
	"	add $40, %rsp\n"
	"	pop %rdx\n	pop %rax\n"
	"	ret\n"
	".size sonde_mcount_return, .-sonde_mcount_return\n");
#endif
