/* threads: many short-lived threads.
 *
 * Usage: threads N AT_ONCE MS
 * Runs N threads, at most AT_ONCE at a time; each burns MS milliseconds of
 * its own CPU time in thread_burn and exits. At the end it prints, per
 * thread, "thread TID cpu_ns N", like split.
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

struct job {
	pthread_t thread;
	long long limit_ns, cpu_ns;
	long tid;
};

/* The clock is read every 100000 rounds, some 100-300 µs: read every few
 * µs, as it once was, the system call took a fifth of the CPU time on a
 * loaded machine, and samples, which count user time only, fell short of
 * the CPU time the threads print. */
__attribute__((noinline)) void thread_burn(struct job *j) {
	unsigned long x = sink;
	while (thread_cpu_ns() < j->limit_ns)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

static void *run(void *arg) {
	struct job *j = arg;
	j->tid = syscall(SYS_gettid);
	thread_burn(j);
	j->cpu_ns = thread_cpu_ns();
	return NULL;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 500;
	int at_once = argc > 2 ? atoi(argv[2]) : 2;
	double ms = argc > 3 ? atof(argv[3]) : 4;
	struct job *js = calloc(n, sizeof *js);
	for (int i = 0; i < n; i += at_once) {
		int end = i + at_once < n ? i + at_once : n;
		for (int k = i; k < end; k++) {
			js[k].limit_ns = (long long)(ms * 1e6);
			if (pthread_create(&js[k].thread, NULL, run, &js[k]) != 0) {
				perror("pthread_create");
				return 1;
			}
		}
		for (int k = i; k < end; k++)
			pthread_join(js[k].thread, NULL);
	}
	for (int i = 0; i < n; i++)
		printf("thread %ld cpu_ns %lld\n", js[i].tid, js[i].cpu_ns);
	return 0;
}
