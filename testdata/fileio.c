/* fileio: known file I/O for filetop and fileslower.
 *   fileio copy OUT IN   writes exactly 10 MiB to OUT (64 KiB write(2)s,
 *                        then pwrite64, writev) and reads exactly 3 MiB of
 *                        IN (read, pread64, readv)
 *   fileio slow FIFO N   N times: a child writes 4 bytes into FIFO after
 *                        50 ms while this process blocks in read(2); prints
 *                        each read's own duration in ns on stderr, one a line
 *   fileio xfer OUT IN   copies 1 MiB of IN to OUT with sendfile, then the
 *                        next 1 MiB with copy_file_range; prints the number
 *                        of calls on stderr
 *   fileio spin FILE N   N one-byte pread64s of FILE (the cost benchmark;
 *                        each hits the page cache) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64 << 10)

static char buf[CHUNK];

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* pass does n plain calls on fd, then one positioned and one vectored
 * call, each of CHUNK bytes: write(2), pwrite64(2) and writev(2) when
 * writing, read(2), pread64(2) and readv(2) when not. */
static int pass(int fd, int n, int writing)
{
	struct iovec iov[2] = {{buf, CHUNK / 2}, {buf + CHUNK / 2, CHUNK / 2}};
	for (int i = 0; i < n; i++)
		if ((writing ? write(fd, buf, CHUNK) : read(fd, buf, CHUNK)) != CHUNK)
			return 1;
	off_t at = (off_t)n * CHUNK;
	if ((writing ? pwrite(fd, buf, CHUNK, at) : pread(fd, buf, CHUNK, at)) != CHUNK)
		return 1;
	lseek(fd, at + CHUNK, SEEK_SET);
	return (writing ? writev(fd, iov, 2) : readv(fd, iov, 2)) != CHUNK;
}

static int copy(const char *out, const char *in)
{
	int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int fi = open(in, O_RDONLY);
	if (fo < 0 || fi < 0)
		return 1;
	memset(buf, 'x', sizeof buf);
	/* 10 MiB written (158 + 2 calls of 64 KiB), 3 MiB read (46 + 2). */
	if (pass(fo, 158, 1) || pass(fi, 46, 0))
		return 1;
	close(fo);
	close(fi);
	return 0;
}

static int xfer(const char *out, const char *in)
{
	int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int fi = open(in, O_RDONLY);
	if (fo < 0 || fi < 0)
		return 1;
	int calls = 0;
	off_t off = 0;
	while (off < (1 << 20)) {
		ssize_t n = sendfile(fo, fi, &off, (1 << 20) - off);
		if (n <= 0)
			return 1;
		calls++;
	}
	loff_t in_off = 1 << 20;
	while (in_off < (2 << 20)) {
		ssize_t n = copy_file_range(fi, &in_off, fo, NULL, (2 << 20) - in_off, 0);
		if (n <= 0)
			return 1;
		calls++;
	}
	fprintf(stderr, "calls %d\n", calls);
	return 0;
}

static int slow(const char *fifo, int n)
{
	/* O_RDWR does not wait for a writer, so the wait is in read(2). */
	int fd = open(fifo, O_RDWR);
	if (fd < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		pid_t c = fork();
		if (c == 0) {
			struct timespec d = {0, 50 * 1000000L};
			nanosleep(&d, NULL);
			int w = open(fifo, O_WRONLY);
			_exit(w < 0 || write(w, "ping", 4) != 4);
		}
		long long t0 = now_ns();
		if (read(fd, buf, 4) != 4)
			return 1;
		fprintf(stderr, "%lld\n", now_ns() - t0);
		waitpid(c, NULL, 0);
	}
	return 0;
}

static int spin(const char *file, long n)
{
	int fd = open(file, O_RDONLY);
	if (fd < 0)
		return 1;
	for (long i = 0; i < n; i++)
		if (pread(fd, buf, 1, 0) != 1)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "copy"))
		return copy(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "xfer"))
		return xfer(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "slow"))
		return slow(argv[2], atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "spin"))
		return spin(argv[2], atol(argv[3]));
	fprintf(stderr, "usage: fileio copy OUT IN | xfer OUT IN | slow FIFO N | spin FILE N\n");
	return 2;
}
