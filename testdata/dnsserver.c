/* dnsserver: seed 004's HTTP server in miniature. Worker threads serve
 * line-based requests on persistent loopback TCP connections; every request
 * calls reverse_lookup(), which asks a UDP responder (slowdns) and waits for
 * the answer in poll(). Built with -DCACHED, answers are cached per client
 * address, so only the first request of a client waits.
 * Usage: dnsserver HTTP_PORT DNS_PORT THREADS */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int listener, dns_port;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int cached_addr[1024];
static int ncached;

/* dns_query sends the question and waits for the answer, as the resolver
 * inside getnameinfo() does. (A frame-pointer unwinder cannot see the direct
 * caller of glibc's poll(), which has no frame of its own; real resolvers
 * have layers like this one.) */
__attribute__((noinline)) static int dns_query(unsigned int addr)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons(dns_port)};
	inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
	char q[64];
	int n = snprintf(q, sizeof q, "PTR %08x", addr);
	sendto(s, q, n, 0, (struct sockaddr *)&d, sizeof d);
	struct pollfd p = {.fd = s, .events = POLLIN};
	int ok = poll(&p, 1, 2000) == 1 && recv(s, q, sizeof q, 0) > 0;
	close(s);
	return ok;
}

__attribute__((noinline)) int reverse_lookup(unsigned int addr, char *name, size_t len)
{
#ifdef CACHED
	pthread_mutex_lock(&cache_lock);
	for (int i = 0; i < ncached; i++) {
		if (cached_addr[i] == addr) {
			pthread_mutex_unlock(&cache_lock);
			snprintf(name, len, "host-%08x", addr);
			return 0;
		}
	}
	pthread_mutex_unlock(&cache_lock);
#endif
	int ok = dns_query(addr);
	snprintf(name, len, "host-%08x", addr);
#ifdef CACHED
	pthread_mutex_lock(&cache_lock);
	if (ok && ncached < 1024)
		cached_addr[ncached++] = addr;
	pthread_mutex_unlock(&cache_lock);
#endif
	return ok ? 0 : -1;
}

__attribute__((noinline)) static void serve(int c, unsigned int addr)
{
	char buf[512], name[64];
	size_t have = 0;
	for (;;) {
		ssize_t n = read(c, buf + have, sizeof buf - have - 1);
		if (n <= 0)
			return;
		have += n;
		buf[have] = 0;
		char *nl;
		while ((nl = strchr(buf, '\n'))) {
			reverse_lookup(addr, name, sizeof name);
			char resp[128];
			int m = snprintf(resp, sizeof resp, "OK %s\n", name);
			if (write(c, resp, m) != m)
				return;
			memmove(buf, nl + 1, have - (nl + 1 - buf) + 1);
			have -= nl + 1 - buf;
		}
	}
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		struct sockaddr_in from;
		socklen_t l = sizeof from;
		int c = accept(listener, (struct sockaddr *)&from, &l);
		if (c < 0)
			continue;
		serve(c, ntohl(from.sin_addr.s_addr) ^ ntohs(from.sin_port));
		close(c);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 8080;
	dns_port = argc > 2 ? atoi(argv[2]) : 5353;
	int threads = argc > 3 ? atoi(argv[3]) : 4;
	listener = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (bind(listener, (struct sockaddr *)&a, sizeof a) < 0 || listen(listener, 64) < 0) {
		perror("dnsserver: bind");
		return 1;
	}
	for (int i = 1; i < threads; i++) {
		pthread_t t;
		pthread_create(&t, NULL, worker, NULL);
	}
	worker(NULL); /* the main thread serves too: every thread is a worker */
	return 0;
}
