/* spinlock: seed 001's PostgreSQL case in miniature. Worker threads take a
 * shared spin lock from two call paths; the snapshot path holds it long, so
 * most of the time spent spinning in s_lock belongs to get_snapshot.
 * Usage: spinlock [THREADS] [SECONDS] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static atomic_int lock;
static volatile unsigned long shared_counter;
static int seconds = 2;

__attribute__((noinline)) static void s_lock(void)
{
	while (atomic_exchange_explicit(&lock, 1, memory_order_acquire))
		while (atomic_load_explicit(&lock, memory_order_relaxed))
			;
}

__attribute__((noinline)) static void s_unlock(void)
{
	atomic_store_explicit(&lock, 0, memory_order_release);
}

__attribute__((noinline)) static void lwlock_acquire(void) { s_lock(); }
__attribute__((noinline)) static void lwlock_release(void) { s_unlock(); }

/* Long critical section: copies "the snapshot" under the lock. */
__attribute__((noinline)) static void get_snapshot(void)
{
	lwlock_acquire();
	for (int i = 0; i < 2000; i++)
		shared_counter++;
	lwlock_release();
}

/* Short critical section. */
__attribute__((noinline)) static void insert_tuple(void)
{
	lwlock_acquire();
	shared_counter++;
	lwlock_release();
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	(void)arg;
	double end = now() + seconds;
	while (now() < end) {
		get_snapshot();
		for (int i = 0; i < 4; i++)
			insert_tuple();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	seconds = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t t[64];
	for (int i = 0; i < threads && i < 64; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < threads && i < 64; i++)
		pthread_join(t[i], NULL);
	printf("counter %lu\n", shared_counter);
	return 0;
}
