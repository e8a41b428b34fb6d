/* memleak's ground truth: leak_one() leaks exactly 5,000 blocks of 128 B
 * from one stack; churn() makes 200,000 allocations of mixed sizes (1 B to
 * 300 KB, through every allocator entry point) and frees each of them.
 * Nothing else allocates: no stdio (its buffer is never freed), output
 * through write(2). Built with -DPREFIX the same work goes through a tiny
 * allocator of its own (t_malloc, t_calloc, t_realloc, t_free) and never
 * calls libc's. A warm-up of 1,000 churned allocations (all freed), then
 * 3 s of sleep, lets a tracer load the process's unwind tables before
 * the counted work starts. With
 * -t it prints how long the work took (for bench: "elapsed_ns N"). */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LEAKS 5000
#define CHURN 200000

#ifdef PREFIX
/* A size-class allocator over a static arena: 16-byte classes up to 4 KB,
 * a free list per class, an 8-byte header holding the class. */
#define ARENA (64 << 20)
#define CLASSES 256
static char arena[ARENA] __attribute__((aligned(16)));
static size_t top;
static void *freelist[CLASSES];

__attribute__((noinline)) void *t_malloc(size_t n)
{
	size_t c = (n + 15) / 16;
	if (c >= CLASSES)
		return NULL;
	void *p = freelist[c];
	if (p) {
		freelist[c] = *(void **)p;
		return p;
	}
	if (top + 16 + c * 16 > ARENA)
		return NULL;
	char *b = arena + top;
	top += 16 + c * 16;
	*(size_t *)b = c;
	return b + 16;
}

__attribute__((noinline)) void t_free(void *p)
{
	if (!p)
		return;
	size_t c = *(size_t *)((char *)p - 16);
	*(void **)p = freelist[c];
	freelist[c] = p;
}

__attribute__((noinline)) void *t_calloc(size_t n, size_t m)
{
	void *p = t_malloc(n * m);
	if (p)
		memset(p, 0, n * m);
	return p;
}

__attribute__((noinline)) void *t_realloc(void *old, size_t n)
{
	void *p = t_malloc(n);
	if (p && old) {
		size_t c = *(size_t *)((char *)old - 16);
		memcpy(p, old, c * 16 < n ? c * 16 : n);
		t_free(old);
	}
	return p;
}
#define MALLOC t_malloc
#define FREE t_free
#define CALLOC t_calloc
#define REALLOC t_realloc
static const size_t sizes[] = {1, 24, 100, 128, 500, 1000, 2000, 4000};
#else
#define MALLOC malloc
#define FREE free
#define CALLOC calloc
#define REALLOC realloc
static const size_t sizes[] = {1, 24, 100, 128, 500, 4000, 70000, 300000};
#endif

static void *volatile sink;

__attribute__((noinline)) static void leak_one(void)
{
	sink = MALLOC(128);
}

__attribute__((noinline)) static void churn(unsigned i)
{
	size_t n = sizes[i % 8];
	void *p = NULL;
	switch ((i / 8) % 9) {
	case 0:
		p = MALLOC(n);
		break;
	case 1:
		p = CALLOC(1, n);
		break;
	case 2:
		p = REALLOC(MALLOC(n / 2 + 1), n);
		break;
#ifndef PREFIX
	case 3:
		if (posix_memalign(&p, 64, n))
			p = NULL;
		break;
	case 4:
		p = aligned_alloc(64, (n + 63) & ~(size_t)63);
		break;
	case 5:
		p = memalign(32, n);
		break;
	case 6:
		p = valloc(n);
		break;
	case 7:
		p = reallocarray(NULL, n, 1);
		break;
#endif
	default:
		p = MALLOC(n);
	}
	sink = p;
	FREE(p);
}

/* Print "elapsed_ns N" without stdio. */
static void print_elapsed(long long ns)
{
	char buf[40] = "elapsed_ns ";
	char digits[24];
	int n = 0, len = 11;
	do {
		digits[n++] = '0' + ns % 10;
		ns /= 10;
	} while (ns > 0);
	while (n > 0)
		buf[len++] = digits[--n];
	buf[len++] = '\n';
	write(1, buf, len);
}

int main(int argc, char **argv)
{
	/* Warm up every path once (lazy binding, first touches), all freed. */
	for (unsigned i = 0; i < 1000; i++)
		churn(i);
	usleep(3000000);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned leaked = 0;
	for (unsigned i = 0; i < CHURN; i++) {
		churn(i);
		if (i % (CHURN / LEAKS) == 0 && leaked < LEAKS) {
			leak_one();
			leaked++;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (argc > 1 && strcmp(argv[1], "-t") == 0)
		print_elapsed((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
	else
		write(1, "done\n", 5);
	return 0;
}
