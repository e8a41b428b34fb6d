/* spin: a CPU-bound benchmark target that times itself.
 * Usage: spin ITERATIONS [THREADS]
 * Each thread runs ITERATIONS of a call-heavy loop (so call chains are deep
 * enough to matter); prints "elapsed_ms N" with the wall time of the work. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned long iters;

__attribute__((noinline)) static unsigned long leaf(unsigned long x)
{
	for (int i = 0; i < 64; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}
__attribute__((noinline)) static unsigned long mid(unsigned long x) { return leaf(x) ^ leaf(x + 1); }
__attribute__((noinline)) static unsigned long top(unsigned long x) { return mid(x) + mid(x * 3); }

static void *run(void *arg)
{
	unsigned long x = (unsigned long)arg;
	for (unsigned long i = 0; i < iters; i++)
		x = top(x + i);
	return (void *)x;
}

int main(int argc, char **argv)
{
	iters = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	pthread_t t[64];
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < threads && i < 64; i++)
		pthread_create(&t[i], NULL, run, (void *)(unsigned long)i);
	for (int i = 0; i < threads && i < 64; i++)
		pthread_join(t[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("elapsed_ms %.3f\n", (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
	return 0;
}
