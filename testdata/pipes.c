/* Holds N pipes open (argv[1], default 200), each with one byte written
 * (which gives it a page of buffer), for argv[2] ms (default 1500), then
 * exits. memleak --kernel sees the pipes' memory outstanding meanwhile. */
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	int ms = argc > 2 ? atoi(argv[2]) : 1500;
	usleep(100000);
	for (int i = 0; i < n; i++) {
		int fd[2];
		if (pipe(fd) || write(fd[1], "x", 1) != 1)
			return 1;
	}
	usleep(ms * 1000);
	return 0;
}
