// Calls libc through the PLT in a tight loop (memcmp and strlen on short
// strings), so a profile has samples in the stubs: memcmp@plt,
// strlen@plt. Also frees a block from malloc called through a pointer.
// With 0 bytes the calls return at once, and the stubs get a good share
// of the samples.
// Usage: pltcalls [seconds [bytes (0-8, default 8)]]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double since(const struct timespec *t0) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 0;
	char a[17], b[17];
	memset(a, 'x', sizeof a - 1);
	memset(b, 'x', sizeof b - 1);
	a[16] = b[16] = 0;
	void *(*volatile alloc)(size_t) = malloc;
	free(alloc(4));
	// A length the compiler cannot see keeps memcmp a call.
	size_t len = argc > 2 ? (size_t)atoi(argv[2]) % 9 : 8;
	long n = 0;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++) {
			// The buffers may change (for the compiler): no call leaves the loop.
			__asm__ volatile("" ::: "memory");
			n += memcmp(a, b, len) + (long)strlen(a + 16 - len);
		}
	} while (since(&t0) < secs);
	printf("%ld\n", n);
	return 0;
}
