/* bccwork MODE N: the events of the bcc-style tools' cost rows.
 *   forks N  fork a child that exits at once, N times (exitsnoop)
 *   opens N  open and close FILE N times (opensnoop; FILE is argv[3])
 *   conns N  N loopback TCP connections, each accepted, one byte each
 *            way, then closed (tcplife, tcpconnect) */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int conns(int n)
{
	int ln = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	if (ln < 0 || bind(ln, (void *)&a, sizeof(a)) || listen(ln, 128) || getsockname(ln, (void *)&a, &len))
		return 1;
	char b = 'x';
	for (int i = 0; i < n; i++) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (c < 0 || connect(c, (void *)&a, sizeof(a)))
			return 1;
		int s = accept(ln, NULL, NULL);
		if (s < 0 || write(c, &b, 1) != 1 || read(s, &b, 1) != 1 || write(s, &b, 1) != 1 || read(c, &b, 1) != 1)
			return 1;
		close(c);
		close(s);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int n = atoi(argv[2]);
	if (!strcmp(argv[1], "forks")) {
		for (int i = 0; i < n; i++) {
			pid_t p = fork();
			if (p == 0)
				_exit(0);
			if (p < 0 || waitpid(p, NULL, 0) != p)
				return 1;
		}
		return 0;
	}
	if (!strcmp(argv[1], "opens") && argc > 3) {
		for (int i = 0; i < n; i++) {
			int fd = open(argv[3], O_RDONLY);
			if (fd < 0)
				return 1;
			close(fd);
		}
		return 0;
	}
	if (!strcmp(argv[1], "conns"))
		return conns(n);
	return 2;
}
