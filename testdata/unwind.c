/* unwind: a call chain main → dispatch → {heavy, light} that splits its
 * CPU time 3:1, for the unwinder's tests. Built -O2 -fomit-frame-pointer
 * (and again with frame pointers): the functions are kept apart
 * (noinline) and do real work, so every sample's true stack is known.
 *   unwind SECONDS         runs that long
 *   unwind SECONDS clock   spends the time in clock_gettime (the vDSO)
 *                          under main → clocks
 *   unwind SECONDS deep N  spins N calls of deep() below main */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

/* Work in rounds of n steps of an LCG; the result goes to sink, so the
 * compiler cannot drop the loop. */
__attribute__((noinline)) void heavy(unsigned long n)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < 3 * n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

__attribute__((noinline)) void light(unsigned long n)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

/* A frame of its own (a local array keeps it from being a tail call). */
__attribute__((noinline)) void dispatch(unsigned long n)
{
	volatile unsigned long pad[4] = {n, 0, 0, 0};
	heavy(pad[0]);
	light(pad[0]);
	pad[1] = sink;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Read the clock n times: the time goes to the vDSO. */
__attribute__((noinline)) double clocks(int n)
{
	double t = 0;
	for (int i = 0; i < n; i++)
		t += now();
	return t;
}

/* Recurse n levels, then spin until end: stacks n frames deep. */
__attribute__((noinline)) double deep(int n, double end)
{
	volatile double pad = n;
	if (n > 0)
		return deep(n - 1, end) + pad;
	while (now() < end)
		heavy(1000);
	return pad;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;
	double end = now() + secs;
	if (argc > 3 && strcmp(argv[2], "deep") == 0)
		return (int)deep(atoi(argv[3]), end) & 1;
	if (argc > 2 && strcmp(argv[2], "clock") == 0) {
		while (now() < end)
			sink += (unsigned long)clocks(1000);
		return 0;
	}
	while (now() < end)
		dispatch(200000);
	return 0;
}
