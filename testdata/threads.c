// threads: a process with many idle threads and a few busy ones, for
// attaching at scale (issue: 10,000-thread processes).
//
//   threads IDLE BUSY SECONDS
//
// starts IDLE threads that block at once (in read() on a pipe that never
// gets data) and BUSY threads that wait, then prints "ready PID" and waits
// for a line on stdin. Then each busy thread burns SECONDS of its own CPU
// time in spin() and prints "thread TID cpu_ns N" (N from
// CLOCK_THREAD_CPUTIME_ID, counted from the line), and the process exits.
// Idle threads get the smallest stacks the C library allows, so that ten
// thousand of them cost little memory.
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int idle_pipe[2];
static double seconds;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER;
static int go;

static void *idle(void *arg) {
	char c;
	(void)arg;
	for (;;) {
		if (read(idle_pipe[0], &c, 1) <= 0)
			pause();
	}
	return NULL;
}

static long long thread_cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static volatile unsigned long sink;

__attribute__((noinline)) static void spin(long long until) {
	unsigned long x = 1;
	while (thread_cpu_ns() < until) {
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sink = x;
	}
}

static void *busy(void *arg) {
	(void)arg;
	pthread_mutex_lock(&mu);
	while (!go)
		pthread_cond_wait(&go_cond, &mu);
	pthread_mutex_unlock(&mu);
	long long start = thread_cpu_ns();
	spin(start + (long long)(seconds * 1e9));
	printf("thread %ld cpu_ns %lld\n", (long)syscall(SYS_gettid), thread_cpu_ns() - start);
	fflush(stdout);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: threads IDLE BUSY SECONDS\n");
		return 2;
	}
	int nidle = atoi(argv[1]), nbusy = atoi(argv[2]);
	seconds = atof(argv[3]);
	if (pipe(idle_pipe) != 0) {
		perror("pipe");
		return 1;
	}
	pthread_attr_t small;
	pthread_attr_init(&small);
	pthread_attr_setstacksize(&small, PTHREAD_STACK_MIN);
	for (int i = 0; i < nidle; i++) {
		pthread_t t;
		int err = pthread_create(&t, &small, idle, NULL);
		if (err != 0) {
			fprintf(stderr, "threads: idle thread %d: error %d\n", i, err);
			return 1;
		}
	}
	pthread_t *b = calloc(nbusy, sizeof *b);
	for (int i = 0; i < nbusy; i++) {
		if (pthread_create(&b[i], NULL, busy, NULL) != 0) {
			fprintf(stderr, "threads: busy thread %d\n", i);
			return 1;
		}
	}
	printf("ready %d\n", getpid());
	fflush(stdout);
	char line[16];
	if (fgets(line, sizeof line, stdin) == NULL)
		return 1;
	pthread_mutex_lock(&mu);
	go = 1;
	pthread_cond_broadcast(&go_cond);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < nbusy; i++)
		pthread_join(b[i], NULL);
	return 0;
}
