/* first.c: work from main's first instruction, no warm-up.
 *   first leak N    leaks N × 128 B from leak_here
 *   first spin MS   spins MS ms (CPU time) in spin_here
 *   first block N   sleeps 10 ms N times in block_here
 * each under run_* under main. Built -O2 -fomit-frame-pointer
 * -fno-optimize-sibling-calls. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

volatile unsigned long sink;
void *volatile keep;

__attribute__((noinline)) void leak_here(void) { keep = malloc(128); }

__attribute__((noinline)) void run_leak(long n)
{
	for (long i = 0; i < n; i++)
		leak_here();
}

static long cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

__attribute__((noinline)) void spin_here(long end)
{
	do {
		for (int i = 0; i < 20000; i++)
			sink += i;
	} while (cpu_ns() < end);
}

__attribute__((noinline)) void run_spin(long ms) { spin_here(cpu_ns() + ms * 1000000L); }

__attribute__((noinline)) void block_here(void)
{
	struct timespec ts = {0, 10000000};
	nanosleep(&ts, NULL);
}

__attribute__((noinline)) void run_block(long n)
{
	for (long i = 0; i < n; i++)
		block_here();
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	long n = atol(argv[2]);
	if (!strcmp(argv[1], "leak"))
		run_leak(n);
	else if (!strcmp(argv[1], "spin"))
		run_spin(n);
	else if (!strcmp(argv[1], "block"))
		run_block(n);
	else
		return 2;
	return 0;
}
