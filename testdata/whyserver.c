/* whyserver: seed 004's slow reverse lookup inside one process, for sonde
 * why. WORKERS threads (named "worker") each handle requests in a loop;
 * every request calls resolve_peer(), which sends a query over loopback UDP
 * to the responder thread (named "responder") and waits for the answer in
 * poll(). The responder answers one query at a time, each after sleeping
 * QUERY_MS in usleep(): the workers' time is the responder's sleep. The main
 * thread waits in pthread_join.
 * Usage: whyserver WORKERS QUERY_MS */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static struct sockaddr_in responder_addr;
static int query_ms;

__attribute__((noinline)) int resolve_peer(int s, unsigned int addr)
{
	char q[32];
	int n = snprintf(q, sizeof q, "PTR %08x", addr);
	sendto(s, q, n, 0, (struct sockaddr *)&responder_addr, sizeof responder_addr);
	struct pollfd p = {.fd = s, .events = POLLIN};
	if (poll(&p, 1, 5000) != 1)
		return -1;
	return recv(s, q, sizeof q, 0) > 0 ? 0 : -1;
}

__attribute__((noinline)) static void handle_request(int s, unsigned int addr)
{
	resolve_peer(s, addr);
}

static void *worker(void *arg)
{
	pthread_setname_np(pthread_self(), "worker");
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	unsigned int addr = (unsigned int)(long)arg;
	for (;;)
		handle_request(s, addr++);
	return NULL;
}

__attribute__((noinline)) static void answer_query(int s)
{
	char buf[64];
	struct sockaddr_in from;
	socklen_t l = sizeof from;
	ssize_t n = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &l);
	if (n <= 0)
		return;
	usleep(query_ms * 1000); /* the slow lookup */
	sendto(s, buf, n, 0, (struct sockaddr *)&from, l);
}

static void *responder(void *arg)
{
	int s = (int)(long)arg;
	pthread_setname_np(pthread_self(), "responder");
	for (;;)
		answer_query(s);
	return NULL;
}

int main(int argc, char **argv)
{
	int workers = argc > 1 ? atoi(argv[1]) : 4;
	query_ms = argc > 2 ? atoi(argv[2]) : 20;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	responder_addr.sin_family = AF_INET;
	inet_pton(AF_INET, "127.0.0.1", &responder_addr.sin_addr);
	socklen_t l = sizeof responder_addr;
	if (s < 0 || bind(s, (struct sockaddr *)&responder_addr, sizeof responder_addr) < 0 ||
	    getsockname(s, (struct sockaddr *)&responder_addr, &l) < 0) {
		perror("whyserver: bind");
		return 1;
	}
	pthread_t t[64];
	pthread_create(&t[0], NULL, responder, (void *)(long)s);
	for (int i = 1; i <= workers && i < 64; i++)
		pthread_create(&t[i], NULL, worker, (void *)(long)(i << 16));
	printf("ready\n");
	fflush(stdout);
	pthread_join(t[0], NULL);
	return 0;
}
