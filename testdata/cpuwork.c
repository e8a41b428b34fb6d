/* cpuwork: CPU-time patterns for exact accounting (seed 002).
 *   cpuwork hog       spins forever
 *   cpuwork alt       1 ms of work, 1 ms of sleep, forever
 *   cpuwork instep    2 ms of work at the start of every 10 ms of
 *                     CLOCK_MONOTONIC time: in step with a 100 Hz sampler,
 *                     which then always or never catches it */
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
	volatile unsigned long x = 0;
	for (;;)
		x++;
}
