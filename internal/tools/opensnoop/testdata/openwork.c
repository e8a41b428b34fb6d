/* openwork DIR: opens whose paths, flags and results opensnoop's test
 * compares with strace's: open(2) where the architecture has it, openat
 * creating a file, openat2, a missing file (ENOENT), a path longer than
 * opensnoop keeps (ENAMETOOLONG), and DIR/end last. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct how {
	unsigned long long flags, mode, resolve;
};

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *dir = argv[1];
	char p[512];
#ifdef SYS_open
	snprintf(p, sizeof(p), "%s/a", dir);
	syscall(SYS_open, p, O_RDONLY | O_CREAT, 0644);
#endif
	snprintf(p, sizeof(p), "%s/b", dir);
	openat(AT_FDCWD, p, O_WRONLY | O_CREAT | O_TRUNC, 0640);
	snprintf(p, sizeof(p), "%s/c", dir);
	struct how h = {O_RDWR | O_CREAT, 0600, 0};
	syscall(SYS_openat2, AT_FDCWD, p, &h, sizeof(h));
	snprintf(p, sizeof(p), "%s/missing", dir);
	openat(AT_FDCWD, p, O_RDONLY);
	int n = snprintf(p, sizeof(p), "%s/", dir);
	memset(p + n, 'x', 300);
	p[n + 300] = 0;
	openat(AT_FDCWD, p, O_RDONLY);
	snprintf(p, sizeof(p), "%s/end", dir);
	openat(AT_FDCWD, p, O_RDONLY | O_CREAT, 0600);
	return 0;
}
