/* clones: functions GCC renames or inlines, for resolving functions by
 * their source names (internal/collect/probe/resolve.go). Built with
 * -O2 -fipa-cp-clone -g (-fipa-cp-clone is -O3's IPA-CP cloning; without
 * it GCC 12 changes mix in place instead of keeping both copies):
 *   scale_first → scale_first.isra.0 (IPA-SRA: only one field of the
 *                 struct is passed)
 *   mix         → mix.constprop.0 (IPA-CP: constant shift), alongside mix
 *                 itself for the one call with a variable shift
 *   slow_path   → slow_path.part.0 (partial inlining: the test is inlined
 *                 into user1..user3, the loop split off)
 *   checked     → checked and checked.cold (the abort path)
 *   square      → inlined into main only (DWARF inlined_subroutine)
 * usage: clones [N [DELAY_MS]]: waits DELAY_MS (default 0) so probes can
 * attach, then calls scale_first N times, mix N+1 times (N with shift 3),
 * slow_path's split part N times; prints nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct big {
	long a, b, c, d, e, f, g, h;
};

volatile long sink;

static __attribute__((noinline)) long scale_first(struct big *p, long k)
{
	return p->a * k + 1;
}

static __attribute__((noinline)) long mix(long x, int shift)
{
	long r = x;
	for (int i = 0; i < shift; i++)
		r = (r << shift) ^ (r >> (shift + 1)) ^ (r * i);
	return r;
}

static long table[64];

static long slow_path(long x)
{
	if (__builtin_expect(x >= 0, 1))
		return x;
	long r = 0;
	for (int i = 0; i < 64; i++) {
		table[i] = table[(i * 7) & 63] ^ (x + i);
		r += table[i] * (i | 1);
		if (r > 1000000)
			r -= 999999;
	}
	if (r == 42)
		printf("slow %ld %ld %ld\n", r, table[3], table[9]);
	return r;
}

__attribute__((noinline)) long user1(long x) { return slow_path(x) + 1; }
__attribute__((noinline)) long user2(long x) { return slow_path(x * 3) + 2; }
__attribute__((noinline)) long user3(long x) { return slow_path(x - 5) + 3; }

__attribute__((cold, noinline)) void report(const char *what, long x)
{
	fprintf(stderr, "%s %ld\n", what, x);
}

__attribute__((noinline)) long checked(long x)
{
	long r = x * 7;
	for (int i = 0; i < 3; i++) {
		if (__builtin_expect(r == -12345 + i, 0)) {
			report("bad value", x);
			fprintf(stderr, "again %ld %ld\n", sink, r);
			abort();
		}
		r = r * 3 + sink;
	}
	return r;
}

static inline long square(long x)
{
	return x * x;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	long delay = argc > 2 ? atol(argv[2]) : 0;
	struct timespec ts = {delay / 1000, (delay % 1000) * 1000000};
	nanosleep(&ts, NULL);
	struct big b = {0};
	for (long i = 0; i < n; i++) {
		b.a = i;
		sink += scale_first(&b, i & 7);
		sink += mix(i, 3);
		sink += user1(-1 - i); /* negative: runs the split-off part */
		sink += user2(i);      /* positive: returns in the inlined test */
		sink += checked(i);
		sink += square(sink);
	}
	sink += mix(n, argc); /* keeps mix itself beside its clone */
	sink += square(argc);
	return 0;
}
