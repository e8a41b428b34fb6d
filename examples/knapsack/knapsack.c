/* knapsack: 0/1 knapsack by dynamic programming (seed 000's case).
 * The slow build keeps the whole table with the capacity as the outer
 * dimension, so the inner loop strides across memory; the improved build
 * (-DIMPROVED) keeps one row and walks it backwards, sequentially.
 * prepare() is fixed work common to both, so the solver's share of the
 * profile falls when it gets faster.
 * Usage: knapsack [ITEMS] [CAPACITY] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n, cap;
static int *wt, *val;

__attribute__((noinline)) static unsigned long prepare(void)
{
	unsigned long h = 1469598103934665603UL;
	for (int r = 0; r < 40; r++)
		for (int i = 0; i < 1000000; i++)
			h = (h ^ (unsigned long)i) * 1099511628211UL;
	unsigned int s = 12345;
	for (int i = 0; i < n; i++) {
		s = s * 1103515245 + 12345;
		wt[i] = 1 + (s >> 16) % 100;
		s = s * 1103515245 + 12345;
		val[i] = 1 + (s >> 16) % 1000;
	}
	return h;
}

#ifndef IMPROVED
__attribute__((noinline)) static int solve(void)
{
	/* table[w][i]: best value with capacity w using the first i items. */
	int *table = calloc((size_t)(cap + 1) * (n + 1), sizeof(int));
	for (int i = 1; i <= n; i++) {
		for (int w = 0; w <= cap; w++) {
			int best = table[(size_t)w * (n + 1) + i - 1]; /* hot: strided loads */
			if (wt[i - 1] <= w) {
				int with = table[(size_t)(w - wt[i - 1]) * (n + 1) + i - 1] + val[i - 1];
				if (with > best)
					best = with;
			}
			table[(size_t)w * (n + 1) + i] = best;
		}
	}
	int r = table[(size_t)cap * (n + 1) + n];
	free(table);
	return r;
}
#else
__attribute__((noinline)) static int solve(void)
{
	/* One row, walked from the top so each item is used once. */
	int *best = calloc(cap + 1, sizeof(int));
	for (int i = 0; i < n; i++) {
		for (int w = cap; w >= wt[i]; w--) {
			int with = best[w - wt[i]] + val[i]; /* hot: sequential */
			if (with > best[w])
				best[w] = with;
		}
	}
	int r = best[cap];
	free(best);
	return r;
}
#endif

int main(int argc, char **argv)
{
	n = argc > 1 ? atoi(argv[1]) : 1200;
	cap = argc > 2 ? atoi(argv[2]) : 30000;
	wt = malloc(n * sizeof(int));
	val = malloc(n * sizeof(int));
	unsigned long h = prepare();
	printf("best value %d (check %lu)\n", solve(), h & 0xff);
	return 0;
}
