/* libmain: calls lib_a and lib_b from libspin.so with a 3:1 split. */
#include <stdlib.h>

unsigned long lib_a(unsigned long);
unsigned long lib_b(unsigned long);

int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 300;
	unsigned long sum = 0;
	for (unsigned long r = 0; r < rounds; r++) {
		sum += lib_a(3000000);
		sum += lib_b(1000000);
	}
	return sum == 42;
}
