/* convoy: a lock convoy for sonde why. THREADS threads loop on one mutex:
 * take_lock() locks it, critical_section() sleeps HOLD_MS in usleep while
 * holding it, then it is unlocked. All but one thread wait in the futex;
 * what they wait for is the holder's sleep inside the lock.
 * Usage: convoy THREADS HOLD_MS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int hold_ms;
static volatile unsigned long rounds;

__attribute__((noinline)) static void critical_section(void)
{
	rounds++;
	usleep(hold_ms * 1000);
}

__attribute__((noinline)) static void take_lock(void)
{
	pthread_mutex_lock(&lock);
}

__attribute__((noinline)) static void release_lock(void)
{
	pthread_mutex_unlock(&lock);
}

static void *loop(void *arg)
{
	(void)arg;
	for (;;) {
		take_lock();
		critical_section();
		release_lock();
		sched_yield(); /* let a waiter in: a convoy, not one thread keeping the lock */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	hold_ms = argc > 2 ? atoi(argv[2]) : 10;
	pthread_t t[64];
	for (int i = 0; i < n && i < 64; i++)
		pthread_create(&t[i], NULL, loop, NULL);
	printf("ready\n");
	fflush(stdout);
	pthread_join(t[0], NULL);
	return 0;
}
