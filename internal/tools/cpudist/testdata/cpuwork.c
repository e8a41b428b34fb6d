/* cpuwork N: prints "ready", waits for a line on stdin, then N times runs about 2 ms of
 * CPU and sleeps 1 ms, prints "done", and waits for stdin to close. Its
 * runs are what cpudist's test measures between the two waits. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 50;
	char line[16];
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	volatile unsigned long x = 0;
	for (int i = 0; i < n; i++) {
		double until = cpu_ms() + 2;
		while (cpu_ms() < until)
			x++;
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	printf("done\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
