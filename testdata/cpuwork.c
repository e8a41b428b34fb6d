/* cpuwork: CPU-time patterns for exact accounting (seed 002).
 *   cpuwork hog       spins forever
 *   cpuwork alt       1 ms of work, 1 ms of sleep, forever
 *   cpuwork instep    2 ms of work at the start of every 10 ms of
 *                     CLOCK_MONOTONIC time: in step with a 100 Hz sampler,
 *                     which then always or never catches it
 *   cpuwork split     forever: split_major's 3 units of work, then
 *                     split_minor's 1 (the same loop, no calls): 3/4 of
 *                     its CPU time has split_major <- main as its stack */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ULL + t.tv_nsec;
}

static void spin_for(unsigned long long ns)
{
	unsigned long long end = now_ns() + ns;
	volatile unsigned long x = 0;
	while (now_ns() < end)
		x++;
}

/* A unit is a fixed count of one loop: CPU time in proportion to units
 * whatever the load, and a leaf with no callee to share its samples. */
#define UNIT 1000000UL

__attribute__((noinline)) void split_major(void)
{
	for (volatile unsigned long i = 0; i < 3 * UNIT; i++)
		;
}

__attribute__((noinline)) void split_minor(void)
{
	for (volatile unsigned long i = 0; i < UNIT; i++)
		;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "hog";
	if (strcmp(mode, "alt") == 0) {
		struct timespec ms = {0, 1000000};
		for (;;) {
			spin_for(1000000);
			nanosleep(&ms, NULL);
		}
	}
	if (strcmp(mode, "instep") == 0) {
		const unsigned long long period = 10000000;
		for (;;) {
			unsigned long long next = (now_ns() / period + 1) * period;
			struct timespec t = {next / 1000000000ULL, next % 1000000000ULL};
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
			spin_for(2000000);
		}
	}
	if (strcmp(mode, "split") == 0) {
		for (;;) {
			split_major();
			split_minor();
		}
	}
	volatile unsigned long x = 0;
	for (;;)
		x++;
}
