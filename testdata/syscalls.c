/* syscalls: spends most of its time in the kernel, writing to /dev/null. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 2000000;
	int fd = open("/dev/null", O_WRONLY);
	char buf[64] = {0};
	if (fd < 0)
		return 1;
	for (long i = 0; i < n; i++)
		if (write(fd, buf, sizeof buf) < 0)
			return 1;
	return 0;
}
