/* brief: a short busy program, for checking that a run is sampled from
 * its first instruction to its last.
 *
 *   brief MS [THREADS [log]]
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
 *
 * With "log", each thread also keeps its readings of its CPU clock
 * against CLOCK_MONOTONIC over its burn and prints them after its line,
 *
 *   at TID MONOTONIC_NS CPU_NS
 *
 * one a reading, so that a recording's samples can be placed in the
 * thread's own CPU time: what the gap between two of them was in time it
 * ran, whatever kept it off its CPU meanwhile.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long ms;
static int logging;
static volatile unsigned long sink;

/* A thread's log: readings of CLOCK_MONOTONIC and of its CPU clock. */
struct reading {
	long long wall, cpu;
};
struct log {
	struct reading *r;
	size_t n, cap;
};

static long long thread_cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long wall_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) static void burn(long long until, struct log *log) {
	unsigned long x = sink;
	for (;;) {
		long long cpu = thread_cpu_ns();
		if (log && log->n < log->cap)
			log->r[log->n++] = (struct reading){wall_ns(), cpu};
		if (cpu >= until)
			break;
		for (int i = 0; i < 5000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sink = x;
	}
}

static void *run(void *arg) {
	(void)arg;
	struct log log = {0}, *l = NULL;
	if (logging) {
		/* A reading every microsecond at most: room for all. */
		log.cap = ms * 1000 + 16;
		log.r = malloc(log.cap * sizeof *log.r);
		l = log.r ? &log : NULL;
	}
	long long wall = wall_ns();
	long long start = thread_cpu_ns();
	burn(start + ms * 1000000, l);
	long long end = thread_cpu_ns();
	long tid = (long)syscall(SYS_gettid);
	flockfile(stdout);
	printf("thread %ld cpu_ns %lld clock %lld %lld wall_ns %lld\n", tid, end - start, start, end, wall_ns() - wall);
	for (size_t i = 0; l && i < log.n; i++)
		printf("at %ld %lld %lld\n", tid, log.r[i].wall, log.r[i].cpu);
	funlockfile(stdout);
	fflush(stdout);
	free(log.r);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 2 || argc > 4 || (argc == 4 && strcmp(argv[3], "log") != 0)) {
		fprintf(stderr, "usage: brief MS [THREADS [log]]\n");
		return 2;
	}
	ms = atoll(argv[1]);
	int n = argc >= 3 ? atoi(argv[2]) : 1;
	logging = argc == 4;
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
