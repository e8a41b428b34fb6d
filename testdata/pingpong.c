/* pingpong: pairs of threads pass one byte back and forth through two
 * pipes, so every round trip is two wake-ups and two context switches —
 * a context-switch-heavy load for run-queue latency tests.
 * usage: pingpong PAIRS SECONDS; prints the round trips made. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct pair {
	int ab[2], ba[2];
	volatile int stop;
	unsigned long rounds;
};

static void *pong(void *arg)
{
	struct pair *p = arg;
	char c;
	while (read(p->ab[0], &c, 1) == 1)
		if (write(p->ba[1], &c, 1) != 1)
			break;
	return NULL;
}

static void *ping(void *arg)
{
	struct pair *p = arg;
	char c = 'x';
	while (!p->stop) {
		if (write(p->ab[1], &c, 1) != 1 || read(p->ba[0], &c, 1) != 1)
			break;
		p->rounds++;
	}
	close(p->ab[1]); /* pong sees EOF */
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	int secs = argc > 2 ? atoi(argv[2]) : 10;
	struct pair *ps = calloc(n, sizeof(*ps));
	pthread_t *t = calloc(2 * n, sizeof(*t));
	for (int i = 0; i < n; i++) {
		if (pipe(ps[i].ab) || pipe(ps[i].ba)) {
			perror("pipe");
			return 1;
		}
		pthread_create(&t[2 * i], NULL, pong, &ps[i]);
		pthread_create(&t[2 * i + 1], NULL, ping, &ps[i]);
	}
	sleep(secs);
	unsigned long total = 0;
	for (int i = 0; i < n; i++)
		ps[i].stop = 1;
	for (int i = 0; i < 2 * n; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < n; i++)
		total += ps[i].rounds;
	printf("%lu\n", total);
	return 0;
}
