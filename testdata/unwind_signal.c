/* unwind_signal: most of the time in a signal handler, to unwind through
 * the kernel's signal frame (glibc's __restore_rt) back into the code the
 * signal interrupted: main → outer_loop | signal → on_signal → handler_work.
 * Built -O2 -fomit-frame-pointer.
 *   unwind_signal SECONDS */
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) void handler_work(void)
{
	double end = now() + 0.003;
	while (now() < end)
		sink++;
}

__attribute__((noinline)) void on_signal(int sig)
{
	(void)sig;
	handler_work();
	sink++;
}

__attribute__((noinline)) void outer_loop(double end)
{
	while (now() < end)
		sink++;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 4000}, {0, 4000}};
	setitimer(ITIMER_REAL, &it, NULL);
	outer_loop(now() + secs);
	return 0;
}
