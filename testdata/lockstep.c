/* lockstep: a program whose loop has the sampling interval's period.
 *
 * Usage: lockstep THREADS SECONDS [ROUND_US]
 * THREADS threads (the main thread is the first; with more, the main thread
 * starts the others and works beside them) each call alpha, beta and gamma_
 * with 5:3:2 units of identical work in a loop whose round takes ROUND_US
 * microseconds of the thread's CPU time (default 1000: one round per
 * interval at the default 1 kHz), until the thread has used SECONDS of its
 * own CPU time. A sampler with a fixed period that matches the round
 * samples the same instants of every round, and so the same functions;
 * one whose instants vary does not.
 *
 * Ground truth: each thread reads its own CPU clock
 * (CLOCK_THREAD_CPUTIME_ID) around every call, so the three functions'
 * CPU times are measured, not assumed. At exit it prints per thread
 * "thread TID cpu_ns N alpha_ns A beta_ns B gamma__ns C" and the shares of
 * all threads together, "truth alpha 50.01 beta 29.99 gamma_ 20.00".
 *
 * Each thread sizes its rounds by its own CPU clock (see run), so that a
 * round lasts ROUND_US whatever the machine's speed and load.
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

/* SPIN(n) does n iterations of dependent arithmetic, written out in each
 * function so that the work is the function's own self time. */
#define SPIN(n)                                                             \
	do {                                                                \
		unsigned long x = sink;                                     \
		for (long i = 0; i < (n); i++)                              \
			x = x * 6364136223846793005UL + 1442695040888963407UL; \
		sink = x;                                                   \
	} while (0)

/* The functions take the unit, iterations in a tenth of a round. */
__attribute__((noinline)) void alpha(long unit) { SPIN(5 * unit); }
__attribute__((noinline)) void beta(long unit) { SPIN(3 * unit); }
__attribute__((noinline)) void gamma_(long unit) { SPIN(2 * unit); }

/* iter_ns measures what an iteration costs on this thread's CPU clock
 * (the least of a few tries: a try that was interrupted costs more). */
static double iter_ns(void) {
	double best = 1e9;
	for (int k = 0; k < 5; k++) {
		long n = 200000;
		long long t0 = thread_cpu_ns();
		SPIN(n);
		double ns = (thread_cpu_ns() - t0) / (double)n;
		if (ns < best)
			best = ns;
	}
	return best;
}

struct worker {
	pthread_t thread;
	double seconds, round_us;
	long tid;
	long long cpu_ns, ns[3];
};

/* run keeps the end of its k-th round at k rounds of CPU time from its
 * start: each round's work is sized from what the last one cost and how
 * far the rounds are from that grid, so the loop stays in phase with a
 * sampler of the same fixed period for the whole run, as a program
 * paced by its own clock would (the worst case for such a sampler). */
static void *run(void *arg) {
	struct worker *w = arg;
	w->tid = syscall(SYS_gettid);
	double cost = iter_ns(), round_ns = w->round_us * 1000;
	long unit = (long)(round_ns / 10 / cost) + 1;
	long long start = thread_cpu_ns(), limit = start + (long long)(w->seconds * 1e9);
	long long t = start, u;
	for (long k = 1; t < limit; k++) {
		long long r0 = t;
		alpha(unit);
		u = thread_cpu_ns();
		w->ns[0] += u - t;
		beta(unit);
		t = thread_cpu_ns();
		w->ns[1] += t - u;
		gamma_(unit);
		u = thread_cpu_ns();
		w->ns[2] += u - t;
		t = u;
		/* What an iteration cost this round (smoothed: a round that was
		 * interrupted costs more), and the next round's length: a round,
		 * less how far this one's end is behind the grid (within half
		 * a round either way). */
		cost = 0.9 * cost + 0.1 * (t - r0) / (10.0 * unit);
		double behind = (t - start) - k * round_ns;
		if (behind > round_ns / 2)
			behind = round_ns / 2;
		if (behind < -round_ns / 2)
			behind = -round_ns / 2;
		unit = (long)((round_ns - behind) / 10 / cost) + 1;
	}
	w->cpu_ns = thread_cpu_ns();
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: lockstep THREADS SECONDS [ROUND_US]\n");
		return 2;
	}
	int n = atoi(argv[1]);
	double seconds = atof(argv[2]);
	double round_us = argc > 3 ? atof(argv[3]) : 1000;
	if (n < 1)
		n = 1;
	struct worker *ws = calloc(n, sizeof *ws);
	for (int i = 0; i < n; i++) {
		ws[i].seconds = seconds;
		ws[i].round_us = round_us;
	}
	for (int i = 1; i < n; i++)
		pthread_create(&ws[i].thread, NULL, run, &ws[i]);
	run(&ws[0]);
	for (int i = 1; i < n; i++)
		pthread_join(ws[i].thread, NULL);
	double sum[3] = {0, 0, 0};
	for (int i = 0; i < n; i++) {
		printf("thread %ld cpu_ns %lld alpha_ns %lld beta_ns %lld gamma__ns %lld\n",
		       ws[i].tid, ws[i].cpu_ns, ws[i].ns[0], ws[i].ns[1], ws[i].ns[2]);
		for (int k = 0; k < 3; k++)
			sum[k] += ws[i].ns[k];
	}
	double all = sum[0] + sum[1] + sum[2];
	printf("truth alpha %.2f beta %.2f gamma_ %.2f\n", 100 * sum[0] / all, 100 * sum[1] / all, 100 * sum[2] / all);
	return 0;
}
