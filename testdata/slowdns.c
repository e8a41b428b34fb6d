/* slowdns: a UDP "DNS" responder on 127.0.0.1 that answers each query after
 * 30–100 ms, like the slow reverse lookups of seed 004.
 * Usage: slowdns PORT */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int sock;

struct query {
	struct sockaddr_in from;
	char buf[256];
	ssize_t n;
};

static void *answer(void *arg)
{
	struct query *q = arg;
	struct timespec d = {0, (30 + rand() % 71) * 1000000L};
	nanosleep(&d, NULL);
	sendto(sock, q->buf, q->n, 0, (struct sockaddr *)&q->from, sizeof q->from);
	free(q);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(argc > 1 ? atoi(argv[1]) : 5353)};
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	sock = socket(AF_INET, SOCK_DGRAM, 0);
	if (sock < 0 || bind(sock, (struct sockaddr *)&a, sizeof a) < 0) {
		perror("slowdns: bind");
		return 1;
	}
	srand(getpid());
	for (;;) {
		struct query *q = malloc(sizeof *q);
		socklen_t l = sizeof q->from;
		q->n = recvfrom(sock, q->buf, sizeof q->buf, 0, (struct sockaddr *)&q->from, &l);
		if (q->n <= 0) {
			free(q);
			continue;
		}
		pthread_t t;
		pthread_create(&t, NULL, answer, q);
		pthread_detach(t);
	}
}
