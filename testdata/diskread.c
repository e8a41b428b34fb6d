/* diskread: a disk-bound reader for sonde why. Writes FILE (32 MiB) once,
 * then reads 4 KiB blocks at pseudo-random offsets with O_DIRECT (no page
 * cache: every read goes to the device), each in read_block().
 * Usage: diskread FILE */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIZE (32 << 20)
#define BLOCK 4096

__attribute__((noinline)) static int read_block(int fd, void *buf, off_t off)
{
	return pread(fd, buf, BLOCK, off) == BLOCK ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "diskread.dat";
	int w = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char *chunk = malloc(1 << 20);
	memset(chunk, 0x5a, 1 << 20);
	for (int i = 0; i < SIZE >> 20; i++)
		if (write(w, chunk, 1 << 20) != 1 << 20) {
			perror("diskread: write");
			return 1;
		}
	fsync(w);
	close(w);
	int fd = open(path, O_RDONLY | O_DIRECT);
	void *buf;
	if (fd < 0 || posix_memalign(&buf, BLOCK, BLOCK)) {
		perror("diskread: open O_DIRECT");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	unsigned long x = 12345;
	for (;;) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		read_block(fd, buf, (off_t)((x >> 33) % (SIZE / BLOCK)) * BLOCK);
	}
}
