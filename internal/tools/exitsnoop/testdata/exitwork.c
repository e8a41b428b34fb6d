/* exitwork: processes whose exits exitsnoop's test knows in advance.
 *   exitwork code N     exit(N) at once
 *   exitwork sleep MS   sleep MS milliseconds, then exit(0)
 *   exitwork wait       print "ready", then wait to be killed
 *   exitwork threads N  start N threads, join them, exit(0) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *thread(void *arg) { return arg; }

int main(int argc, char **argv)
{
	if (argc < 2)
		return 100;
	if (!strcmp(argv[1], "code") && argc > 2)
		exit(atoi(argv[2]));
	if (!strcmp(argv[1], "sleep") && argc > 2) {
		long ms = atol(argv[2]);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
		return 0;
	}
	if (!strcmp(argv[1], "wait")) {
		printf("ready\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	if (!strcmp(argv[1], "threads") && argc > 2) {
		int n = atoi(argv[2]);
		pthread_t t[64];
		for (int i = 0; i < n && i < 64; i++)
			pthread_create(&t[i], NULL, thread, NULL);
		for (int i = 0; i < n && i < 64; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	return 100;
}
