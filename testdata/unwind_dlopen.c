/* unwind_dlopen: code that appears after the profiler started. Built
 * twice: with -DLIB -shared as libunwindlate.so (lib_outer → lib_inner,
 * no frame pointers), and as the program that sleeps, then dlopens the
 * library and spins in it.
 *   unwind_dlopen LIBPATH DELAY_SECONDS RUN_SECONDS */
#ifdef LIB
static volatile unsigned long sink;

__attribute__((noinline)) void lib_inner(unsigned long n)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1;
	sink = x;
}

__attribute__((noinline)) void lib_outer(unsigned long n)
{
	volatile unsigned long pad[2] = {n, 0};
	lib_inner(pad[0]);
	pad[1] = sink;
}
#else
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	usleep((useconds_t)(atof(argv[2]) * 1e6));
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	void (*outer)(unsigned long) = (void (*)(unsigned long))dlsym(h, "lib_outer");
	double end = now() + atof(argv[3]);
	while (now() < end)
		outer(100000);
	return 0;
}
#endif
