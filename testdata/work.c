/* work: a CPU-bound workload with a known 3:1 split.
 * spin_a and spin_b run the same loop; spin_a is called with three times
 * the iterations of spin_b, so a profiler should attribute 75% / 25%.
 * Usage: work [ROUNDS]   (one round is about 1-2 ms on a 2020s x86 core)
 *        work SECONDSs     rounds until that much time has passed (work 2.5s)
 *        work wait [SECONDS] rounds until SIGUSR1 (or SIGTERM), then SECONDS
 *                          more (default 0), then exits 0
 * Tests that attach to a running work (-p) size it in time, not in rounds:
 * a round's length depends on the host, a tool's start-up too.
 *
 * The same split across a shared library: -DWORK_LIB builds only the two
 * functions (libspin.so), -DWORK_MAIN only main calling them there
 * (libmain); the tests rename them lib_a and lib_b with -D, so a frame
 * says which build it came from. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef WORK_MAIN
/* Both start on a 64-byte line, so their loops sit alike in the cache
 * lines and the decoder (a loop whose branch crosses a 32-byte boundary
 * runs slower on many x86 cores): the split is the iterations' 3:1, not
 * the layout's. */
__attribute__((noinline, aligned(64))) unsigned long spin_a(unsigned long n)
{
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		x += i * 7;
	return x;
}

__attribute__((noinline, aligned(64))) unsigned long spin_b(unsigned long n)
{
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		x += i * 7;
	return x;
}
#else
unsigned long spin_a(unsigned long);
unsigned long spin_b(unsigned long);
#endif

#ifndef WORK_LIB
static volatile sig_atomic_t stop;

static void on_signal(int sig) { (void)sig; stop = 1; }

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *arg = argc > 1 ? argv[1] : "300";
	unsigned long rounds = strtoul(arg, NULL, 10);
	double end = 0; /* 0: count rounds */
	size_t n = strlen(arg);
	double after = 0; /* wait: seconds to run on once told */
	if (strcmp(arg, "wait") == 0) {
		signal(SIGUSR1, on_signal);
		signal(SIGTERM, on_signal);
		end = 1e300;
		after = argc > 2 ? strtod(argv[2], NULL) : 0;
	} else if (n > 1 && arg[n - 1] == 's') {
		end = now() + strtod(arg, NULL);
	}
	unsigned long sum = 0;
	for (unsigned long r = 0; end ? now() < end : r < rounds; r++) {
		if (stop == 1) { /* told: the end is now set in time */
			stop = 2;
			end = now() + after;
		}
		sum += spin_a(3000000);
		sum += spin_b(1000000);
	}
	return sum == 42; /* keep the work observable; exits 0 */
}
#endif
