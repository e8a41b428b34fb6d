/* stackwork A B: waits for a line on stdin, then calls target() from
 * caller_a A times and from caller_b B times; target calls getppid(2)
 * once. Prints "done" and waits for stdin to close. stackcount's test
 * counts the stacks reaching target (a uprobe) and the getppid
 * tracepoint: A through caller_a, B through caller_b. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((noinline)) long target(void)
{
	return syscall(SYS_getppid);
}

__attribute__((noinline)) long caller_a(int n)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += target();
	return s;
}

__attribute__((noinline)) long caller_b(int n)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += target();
	return s;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	char line[16];
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	long s = caller_a(atoi(argv[1])) + caller_b(atoi(argv[2]));
	printf("done %ld\n", s > 0);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
