/* matmul: multiply two N×N matrices, naive or with B transposed first.
 * Seed 003's case: the naive inner loop walks b by column, so every step is
 * a cache miss; transposing b makes both operands stream by row.
 * Usage: matmul [naive|transposed] [N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double *a, *b, *c, *bt;

__attribute__((noinline)) static void multiply(int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double sum = 0;
			for (int k = 0; k < n; k++)
				sum += a[i * n + k] * b[k * n + j];
			c[i * n + j] = sum;
		}
}

__attribute__((noinline)) static void transpose(int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			bt[j * n + i] = b[i * n + j];
}

__attribute__((noinline)) static void multiply_transposed(int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double sum = 0;
			for (int k = 0; k < n; k++)
				sum += a[i * n + k] * bt[j * n + k];
			c[i * n + j] = sum;
		}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "naive";
	int n = argc > 2 ? atoi(argv[2]) : 1024;
	a = malloc(sizeof(double) * n * n);
	b = malloc(sizeof(double) * n * n);
	c = malloc(sizeof(double) * n * n);
	bt = malloc(sizeof(double) * n * n);
	for (int i = 0; i < n * n; i++) {
		a[i] = (double)(i % 13);
		b[i] = (double)(i % 7);
	}
	if (strcmp(mode, "transposed") == 0) {
		transpose(n);
		multiply_transposed(n);
	} else {
		multiply(n);
	}
	printf("c[n-1] = %.0f\n", c[n * n - 1]);
	return 0;
}
