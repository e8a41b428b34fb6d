/* jit: behaves like a JIT runtime. It copies the machine code of spin()
 * into anonymous executable memory, announces it in /tmp/perf-PID.map (the
 * format perf and sonde read) and runs it from there, so a profiler sees
 * samples in memory that belongs to no file.
 * Usage: jit [ITERATIONS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline)) unsigned long spin(unsigned long n)
{
	unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		x = x * 31 + i;
	return x;
}
__attribute__((noinline)) void spin_end(void) {}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000000UL;
	size_t size = (size_t)((char *)spin_end - (char *)spin);
	if (size == 0 || size > 4096)
		size = 256;
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	memcpy(code, (void *)spin, size);
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx jit_spin\n", (unsigned long)code, size);
	fclose(f);
	unsigned long (*fn)(unsigned long) = (unsigned long (*)(unsigned long))code;
	printf("%lu\n", fn(n) & 1);
	return 0;
}
