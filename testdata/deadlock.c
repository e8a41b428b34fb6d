/* Lock-order workloads for sonde deadlock (internal/tools/deadlock tests, bench).
 *
 *   deadlock abba       thread 1 takes lock_a then lock_b; after it is done,
 *                       thread 2 takes lock_b then lock_a: an inversion that
 *                       never hangs (the threads run one after the other)
 *   deadlock ordered    both threads take lock_a then lock_b
 *   deadlock rwlock     two readers take rw_a, rw_b in opposite orders, at
 *                       the same time (both read locks are held at once)
 *   deadlock recursive  a recursive mutex re-locked by its holder, around
 *                       lock_b, by two threads
 *   deadlock trylock    thread 2 holds lock_b and only tries lock_a
 *   deadlock bench N [MS]  N nested lock_a → lock_b pairs, no sleeps; prints
 *                       "ops N elapsed_ns T" (lock operations, time), then
 *                       waits MS milliseconds (a tracer's counts can be read)
 *
 * Each lock is taken in a function of its own (take_*), called from the
 * thread's function (first_*, second_*), so stacks show who took what.
 * The start waits for sonde's unwinder to load the process's tables. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t lock_warm = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t rw_a = PTHREAD_RWLOCK_INITIALIZER;
pthread_rwlock_t rw_b = PTHREAD_RWLOCK_INITIALIZER;
pthread_mutex_t lock_rec;
static pthread_barrier_t both;

#define NOINLINE __attribute__((noinline))

NOINLINE void take_a(void) { pthread_mutex_lock(&lock_a); }
NOINLINE void take_b(void) { pthread_mutex_lock(&lock_b); }
NOINLINE void drop(pthread_mutex_t *m) { pthread_mutex_unlock(m); }

/* Thread 1 of abba and ordered: a, then b. */
NOINLINE void *first_a_then_b(void *arg)
{
	take_a();
	take_b();
	drop(&lock_b);
	drop(&lock_a);
	return arg;
}

/* Thread 2 of abba: b, then a. */
NOINLINE void *second_b_then_a(void *arg)
{
	take_b();
	take_a();
	drop(&lock_a);
	drop(&lock_b);
	return arg;
}

NOINLINE void read_a(void) { pthread_rwlock_rdlock(&rw_a); }
NOINLINE void read_b(void) { pthread_rwlock_rdlock(&rw_b); }

/* Both readers hold their first read lock while taking the second; the
 * barrier makes them overlap, which read locks allow. */
NOINLINE void *reader_a_then_b(void *arg)
{
	read_a();
	pthread_barrier_wait(&both);
	read_b();
	pthread_rwlock_unlock(&rw_b);
	pthread_rwlock_unlock(&rw_a);
	return arg;
}

NOINLINE void *reader_b_then_a(void *arg)
{
	read_b();
	pthread_barrier_wait(&both);
	read_a();
	pthread_rwlock_unlock(&rw_a);
	pthread_rwlock_unlock(&rw_b);
	return arg;
}

/* lock_rec, lock_b, lock_rec again (its holder: no order), in both
 * threads; the second re-lock after lock_b is released. */
NOINLINE void *recursive(void *arg)
{
	pthread_mutex_lock(&lock_rec);
	take_b();
	pthread_mutex_lock(&lock_rec);
	pthread_mutex_unlock(&lock_rec);
	drop(&lock_b);
	pthread_mutex_lock(&lock_rec);
	pthread_mutex_unlock(&lock_rec);
	pthread_mutex_unlock(&lock_rec);
	return arg;
}

/* Holds b and only tries a: a try-lock never waits, so no inversion. */
NOINLINE void *second_b_then_try_a(void *arg)
{
	take_b();
	if (pthread_mutex_trylock(&lock_a) == 0)
		drop(&lock_a);
	drop(&lock_b);
	return arg;
}

static void one_after_other(void *(*t1)(void *), void *(*t2)(void *))
{
	pthread_t a, b;
	pthread_create(&a, NULL, t1, NULL);
	pthread_join(a, NULL);
	pthread_create(&b, NULL, t2, NULL);
	pthread_join(b, NULL);
}

static void together(void *(*t1)(void *), void *(*t2)(void *))
{
	pthread_t a, b;
	pthread_barrier_init(&both, NULL, 2);
	pthread_create(&a, NULL, t1, NULL);
	pthread_create(&b, NULL, t2, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "abba";
	/* A lock walked before the unwinder has this process's tables gets a
	 * frame-pointer stack; the walker asks for them at its first walks
	 * (at most every 50 ms). */
	for (int i = 0; i < 6; i++) {
		pthread_mutex_lock(&lock_warm);
		pthread_mutex_unlock(&lock_warm);
		usleep(60000);
	}
	pthread_mutexattr_t ra;
	pthread_mutexattr_init(&ra);
	pthread_mutexattr_settype(&ra, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&lock_rec, &ra);

	if (!strcmp(mode, "abba"))
		one_after_other(first_a_then_b, second_b_then_a);
	else if (!strcmp(mode, "ordered"))
		one_after_other(first_a_then_b, first_a_then_b);
	else if (!strcmp(mode, "rwlock"))
		together(reader_a_then_b, reader_b_then_a);
	else if (!strcmp(mode, "recursive"))
		one_after_other(recursive, recursive);
	else if (!strcmp(mode, "trylock"))
		one_after_other(first_a_then_b, second_b_then_try_a);
	else if (!strcmp(mode, "bench")) {
		long n = argc > 2 ? atol(argv[2]) : 100000;
		long long t0 = now_ns();
		for (long i = 0; i < n; i++)
			first_a_then_b(NULL);
		printf("ops %ld elapsed_ns %lld\n", 4 * n, now_ns() - t0);
		fflush(stdout);
		if (argc > 3)
			usleep(atol(argv[3]) * 1000);
	} else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	return 0;
}
