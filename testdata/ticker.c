/* ticker: calls tick() every 10 ms of CLOCK_MONOTONIC (absolute sleeps, so
 * no drift) until killed: 100 calls a second, for tests that check a
 * tool's duration by counting calls.
 * Usage: ticker */
#include <time.h>

__attribute__((noinline)) int tick(int i)
{
	return i + 1;
}

int main(void)
{
	struct timespec next;
	volatile int n = 0;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		next.tv_nsec += 10 * 1000 * 1000;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		n = tick(n);
	}
}
