/* A known call tree for sonde ftrace's tests: main calls a() 3 times, each
 * a() calls b() 10 times, the tenth b() of each a() sleeps 2 ms, and main
 * then calls c(5), which recurses to depth 5. With an argument N > 0 it
 * repeats all that N times, pausing 20 ms between rounds (for -p attach).
 * With CALLTREE_TIMES set it prints how long each sleeping b() took by
 * its own clock ("sleep_ns N" on stderr): the ground truth for a tracer's
 * durations when a busy machine stretches the sleep.
 * noinline and the volatile sink keep every call a call at -O1/-O2. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile long sink;
static int print_times;

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) void b(int i)
{
	if (i == 9) {
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
	sink += i;
}

__attribute__((noinline)) void a(void)
{
	for (int i = 0; i < 10; i++) {
		long long t0 = print_times && i == 9 ? now_ns() : 0;
		b(i);
		if (t0)
			fprintf(stderr, "sleep_ns %lld\n", now_ns() - t0);
	}
}

__attribute__((noinline)) int c(int n)
{
	if (n <= 1)
		return 1;
	return n + c(n - 1);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1;
	print_times = getenv("CALLTREE_TIMES") != NULL;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < 3; i++)
			a();
		sink += c(5);
		if (rounds > 1) {
			struct timespec ts = {0, 20000000};
			nanosleep(&ts, NULL);
		}
	}
	return 0;
}
