/* calls: calls compute() exactly N times and says so, for probe tests.
 * compute(n, scale) returns n * scale + 1.
 * Usage: calls N */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long compute(long n, int scale)
{
	return n * scale + 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	long sum = 0;
	for (int i = 0; i < n; i++)
		sum += compute(i, 3);
	printf("calls %d sum %ld\n", n, sum);
	return 0;
}
