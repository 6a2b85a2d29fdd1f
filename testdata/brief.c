/* brief: a short busy program, for checking that a run is sampled from
 * its first instruction to its last.
 *
 *   brief MS [THREADS]
 *
 * THREADS threads (default 1: the main thread alone) each burn MS ms of
 * their own CPU time in burn(), reading their CPU clock between bursts of
 * about 20 µs, and print
 *
 *   thread TID cpu_ns N clock START END wall_ns W
 *
 * N being the CPU time (CLOCK_THREAD_CPUTIME_ID) the thread used from the
 * start of run(), START and END that clock's readings (it counts a main
 * thread's time before its exec too), W the wall time run() took. Then
 * the thread ends at once (the main thread by returning from main), so
 * that a recording's last sample shows how much of its last stretch it
 * missed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long ms;
static volatile unsigned long sink;

static long long thread_cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) static void burn(long long until) {
	unsigned long x = sink;
	while (thread_cpu_ns() < until) {
		for (int i = 0; i < 5000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sink = x;
	}
}

static long long wall_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *run(void *arg) {
	(void)arg;
	long long wall = wall_ns();
	long long start = thread_cpu_ns();
	burn(start + ms * 1000000);
	long long end = thread_cpu_ns();
	printf("thread %ld cpu_ns %lld clock %lld %lld wall_ns %lld\n", (long)syscall(SYS_gettid), end - start, start, end, wall_ns() - wall);
	fflush(stdout);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: brief MS [THREADS]\n");
		return 2;
	}
	ms = atoll(argv[1]);
	int n = argc == 3 ? atoi(argv[2]) : 1;
	if (n <= 1) {
		run(NULL);
		return 0;
	}
	pthread_t t[n];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, run, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
