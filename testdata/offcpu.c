/* offcpu: threads with a known split of computing and waiting.
 *
 * Usage: offcpu SECONDS
 * "worker" computes in compute() for 3 ms of wall-clock time, then waits
 * in wait_for_data(), blocked in read() on a pipe, for the next byte that
 * "pacer" writes every 10 ms: about 30% computing and 70% blocked.
 * "sleeper" sleeps in nap(), in nanosleep, 20 ms at a time. Each measures
 * its own truth with the monotonic clock and prints, as it ends,
 *   worker TID compute_ns C wait_ns W cpu_ns U life_ns L
 *   sleeper TID nap_ns N cpu_ns U life_ns L
 * where cpu_ns is the thread's own CPU time (CLOCK_THREAD_CPUTIME_ID) and
 * life_ns the wall-clock time from its start to the print.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double seconds;
static int fds[2];
static volatile int done;
static volatile unsigned long sink;
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;

static long long clock_ns(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) void compute(long long ns) {
	long long end = clock_ns(CLOCK_MONOTONIC) + ns;
	while (clock_ns(CLOCK_MONOTONIC) < end)
		for (int i = 0; i < 1000; i++)
			sink += i * sink + 1;
}

__attribute__((noinline)) int wait_for_data(void) {
	char c;
	return read(fds[0], &c, 1) == 1 && c == 'x';
}

static void *worker(void *arg) {
	(void)arg;
	prctl(PR_SET_NAME, "worker");
	long long start = clock_ns(CLOCK_MONOTONIC), computing = 0, waiting = 0;
	for (;;) {
		long long t0 = clock_ns(CLOCK_MONOTONIC);
		int more = wait_for_data();
		long long t1 = clock_ns(CLOCK_MONOTONIC);
		waiting += t1 - t0;
		if (!more)
			break;
		compute(3000000);
		computing += clock_ns(CLOCK_MONOTONIC) - t1;
	}
	long long life = clock_ns(CLOCK_MONOTONIC) - start;
	pthread_mutex_lock(&out);
	printf("worker %ld compute_ns %lld wait_ns %lld cpu_ns %lld life_ns %lld\n", (long)syscall(SYS_gettid),
	       computing, waiting, clock_ns(CLOCK_THREAD_CPUTIME_ID), life);
	fflush(stdout);
	pthread_mutex_unlock(&out);
	return NULL;
}

__attribute__((noinline)) void nap(void) {
	struct timespec ts = {0, 20000000};
	nanosleep(&ts, NULL);
}

static void *sleeper(void *arg) {
	(void)arg;
	prctl(PR_SET_NAME, "sleeper");
	long long start = clock_ns(CLOCK_MONOTONIC), napping = 0;
	while (!done) {
		long long t0 = clock_ns(CLOCK_MONOTONIC);
		nap();
		napping += clock_ns(CLOCK_MONOTONIC) - t0;
	}
	long long life = clock_ns(CLOCK_MONOTONIC) - start;
	pthread_mutex_lock(&out);
	printf("sleeper %ld nap_ns %lld cpu_ns %lld life_ns %lld\n", (long)syscall(SYS_gettid), napping,
	       clock_ns(CLOCK_THREAD_CPUTIME_ID), life);
	fflush(stdout);
	pthread_mutex_unlock(&out);
	return NULL;
}

int main(int argc, char **argv) {
	seconds = argc > 1 ? atof(argv[1]) : 2;
	if (pipe(fds) != 0)
		return 1;
	pthread_t w, s;
	pthread_create(&w, NULL, worker, NULL);
	pthread_create(&s, NULL, sleeper, NULL);
	/* The main thread paces the worker: a byte every 10 ms, on an
	 * absolute schedule so that delays do not accumulate. */
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	long long end = clock_ns(CLOCK_MONOTONIC) + (long long)(seconds * 1e9);
	while (clock_ns(CLOCK_MONOTONIC) < end) {
		next.tv_nsec += 10000000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		if (write(fds[1], "x", 1) != 1)
			return 1;
	}
	close(fds[1]);
	done = 1;
	pthread_join(w, NULL);
	pthread_join(s, NULL);
	return 0;
}
