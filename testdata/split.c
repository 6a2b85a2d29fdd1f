/* split: a CPU-bound program with a known split of CPU time.
 *
 * Usage: split THREADS SECONDS
 * Starts THREADS worker threads (the main thread waits). Each worker calls
 * work_a, work_b and work_c with 5:3:2 units of identical work, until it has
 * used SECONDS of its own CPU time. At exit it prints, per worker,
 * "thread TID cpu_ns N", so tests can compare samples with real CPU time.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static volatile unsigned long sink;

static long long thread_cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* UNITS(n) does n units of work, written out in each function (a macro,
 * not an inline helper) so the work is the function's own self time, and
 * identical in each, so CPU time divides by the number of units. */
#define UNITS(n)                                                            \
	do {                                                                \
		unsigned long x = sink;                                     \
		for (int i = 0; i < (n) * 20000; i++)                       \
			x = x * 6364136223846793005UL + 1442695040888963407UL; \
		sink = x;                                                   \
	} while (0)

/* B_UNITS lets a test build a version where work_b does more work. */
#ifndef B_UNITS
#define B_UNITS 3
#endif

__attribute__((noinline)) void work_a(int n) { UNITS(n); }
__attribute__((noinline)) void work_b(int n) { UNITS(n); }
__attribute__((noinline)) void work_c(int n) { UNITS(n); }

struct worker {
	pthread_t thread;
	double seconds;
	long tid;
	long long cpu_ns;
};

static void *run(void *arg) {
	struct worker *w = arg;
	w->tid = syscall(SYS_gettid);
	long long limit = (long long)(w->seconds * 1e9);
	/* Read the clock every 16 rounds (a few ms), not every round, so
	 * that system time stays negligible: both backends sample user mode
	 * only. (Every round, ptrace samples once leaned toward the code
	 * after the call: threads waiting for a CPU stopped where they were
	 * taken off it, at that call: docs/recording.md, "The ptrace backend".) */
	for (unsigned r = 0; r % 16 || thread_cpu_ns() < limit; r++) {
		work_a(5);
		work_b(B_UNITS);
		work_c(2);
	}
	w->cpu_ns = thread_cpu_ns();
	return NULL;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 2;
	double seconds = argc > 2 ? atof(argv[2]) : 1.0;
	struct worker *ws = calloc(n, sizeof *ws);
	for (int i = 0; i < n; i++) {
		ws[i].seconds = seconds;
		pthread_create(&ws[i].thread, NULL, run, &ws[i]);
	}
	for (int i = 0; i < n; i++)
		pthread_join(ws[i].thread, NULL);
	for (int i = 0; i < n; i++)
		printf("thread %ld cpu_ns %lld\n", ws[i].tid, ws[i].cpu_ns);
	return 0;
}
