/* leafcalls: calls leaf() N times (default 200,000) and prints how long
 * the loop took by its own clock, so a tracer's per-call cost is
 * (traced - untraced) / N without the tracer's start-up in it. leaf() is
 * a few dozen nanoseconds of arithmetic, like seed 000's small functions. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

__attribute__((noinline)) unsigned long leaf(unsigned long x)
{
	for (int i = 0; i < 20; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		sink += leaf(i);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("loop_ns %lld\n", (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
	return 0;
}
