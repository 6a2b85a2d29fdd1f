/* hop: a program that moves to a CPU it has not run on and burns a little
 * of its CPU time there, for checking that a sampler's count over a
 * thread's first moments on a CPU is its time there, on average.
 *
 *   hop MS CPU
 *
 * The thread pins itself to CPU, then burns MS ms (a fraction allowed) of
 * its own CPU time in burn(), reading its CPU clock between bursts of about
 * 2 µs, and prints
 *
 *   thread TID cpu_ns N
 *
 * N being the CPU time (CLOCK_THREAD_CPUTIME_ID) it used from just after
 * the move to the end of burn(). At 1 kHz and MS 0.5 a perfect sampler
 * takes a sample in burn() in half the runs. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static long long thread_cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) static void burn(long long until) {
	unsigned long x = sink;
	while (thread_cpu_ns() < until) {
		for (int i = 0; i < 500; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sink = x;
	}
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: hop MS CPU\n");
		return 2;
	}
	double ms = atof(argv[1]);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(atoi(argv[2]), &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0) {
		perror("hop: sched_setaffinity");
		return 1;
	}
	long long start = thread_cpu_ns();
	burn(start + (long long)(ms * 1e6));
	printf("thread %ld cpu_ns %lld\n", (long)syscall(SYS_gettid), thread_cpu_ns() - start);
	return 0;
}
