/* cpulog: a busy thread that logs its own CPU clock against the wall
 * clock, for checking a sampler's count over any stretch of a recording
 * (a --control window, say) against the CPU time the thread had in it.
 *
 *   cpulog
 *
 * It prints "ready", then burns CPU in its main thread, reading
 * CLOCK_REALTIME and its CLOCK_THREAD_CPUTIME_ID after every burst of
 * about 20 µs, until SIGUSR1; then it prints each reading as
 *
 *   REALTIME_NS CPU_NS
 *
 * and exits. Between two readings the thread ran for the difference of
 * their CPU times, within the difference of their wall times.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile sig_atomic_t done;
static volatile unsigned long sink;

static void stop(int sig) {
	(void)sig;
	done = 1;
}

static long long ns(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(void) {
	/* 60 s of readings at most: 3 million. */
	size_t cap = 3000000, n = 0;
	long long *log = malloc(cap * 2 * sizeof *log);
	if (!log) {
		perror("cpulog");
		return 1;
	}
	signal(SIGUSR1, stop);
	printf("ready\n");
	fflush(stdout);
	unsigned long x = sink;
	while (!done && n < cap) {
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sink = x;
		log[2 * n] = ns(CLOCK_REALTIME);
		log[2 * n + 1] = ns(CLOCK_THREAD_CPUTIME_ID);
		n++;
	}
	while (!done)
		pause();
	for (size_t i = 0; i < n; i++)
		printf("%lld %lld\n", log[2 * i], log[2 * i + 1]);
	return 0;
}
