/* work: a CPU-bound workload with a known 3:1 split.
 * spin_a and spin_b run the same loop; spin_a is called with three times
 * the iterations of spin_b, so a profiler should attribute 75% / 25%.
 * Usage: work [ROUNDS]   (one round is about 1.6 ms on a 2020s x86 core)
 *
 * The same split across a shared library: -DWORK_LIB builds only the two
 * functions (libspin.so), -DWORK_MAIN only main calling them there
 * (libmain); the tests rename them lib_a and lib_b with -D, so a frame
 * says which build it came from. */
#include <stdio.h>
#include <stdlib.h>

#ifndef WORK_MAIN
__attribute__((noinline)) unsigned long spin_a(unsigned long n)
{
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		x += i * 7;
	return x;
}

__attribute__((noinline)) unsigned long spin_b(unsigned long n)
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
int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 300;
	unsigned long sum = 0;
	for (unsigned long r = 0; r < rounds; r++) {
		sum += spin_a(3000000);
		sum += spin_b(1000000);
	}
	return sum == 42; /* keep the work observable; exits 0 */
}
#endif
