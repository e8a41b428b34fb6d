/* statwork: a workload with known counts for sonde stat.
 * Touches PAGES fresh pages (one page fault each), sleeps 1 ms SLEEPS times
 * (one context switch each) and spins for about 200 ms of CPU.
 * With a third argument "wait" it first waits for a byte on stdin, so
 * counters can attach before the work starts.
 * Usage: statwork [PAGES] [SLEEPS] [wait] */
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long pages = argc > 1 ? atol(argv[1]) : 20000;
	int sleeps = argc > 2 ? atoi(argv[2]) : 300;
	if (argc > 3) {
		char c;
		if (read(0, &c, 1) != 1)
			return 1;
	}
	long ps = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, pages * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	for (long i = 0; i < pages; i++)
		m[i * ps] = 1;
	struct timespec ts = {0, 1000000};
	for (int i = 0; i < sleeps; i++)
		nanosleep(&ts, NULL);
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < 300000000UL; i++)
		x += i;
	return 0;
}
