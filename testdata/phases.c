/* phases: phase_a for A ms, then phase_b for B ms; both spend their time in
 * spin(), whose inner loop (one source line, marked HOT) is the hottest
 * line. The process renames itself to a name made of markup, for the web
 * view's names-are-text tests.
 * Usage: phases A_MS B_MS */
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static volatile double sink;

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

__attribute__((noinline)) void spin(long ms)
{
	double x = 1.0;
	long end = now_ms() + ms;
	while (now_ms() < end) {
		for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 1e-9; /* HOT */
	}
	sink = x;
}

__attribute__((noinline)) void phase_a(long ms)
{
	spin(ms);
	sink += 1; /* no tail call: phase_a stays on the stack */
}

__attribute__((noinline)) void phase_b(long ms)
{
	spin(ms);
	sink += 2;
}

int main(int argc, char **argv)
{
	prctl(PR_SET_NAME, "<i>ph&amp;</i>");
	phase_a(argc > 1 ? atol(argv[1]) : 1000);
	phase_b(argc > 2 ? atol(argv[2]) : 1000);
	return 0;
}
