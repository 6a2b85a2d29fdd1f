/* sysheavy: threads with a known split of user and system CPU time.
 *
 * Usage: sysheavy SECONDS
 * Starts two threads: "sys" copies /dev/zero to /dev/null one byte per
 * system call (most of its time in the kernel), "user" computes (nearly
 * all of it in user mode). Each runs until it has used SECONDS of its own
 * CPU time, then prints "thread TID NAME user_ns U sys_ns S" from
 * getrusage(RUSAGE_THREAD), so tests can compare a profile's CPU time
 * with the thread's real user + system time.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double seconds;
static volatile unsigned long sink;
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;

static long long thread_cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void report(const char *name) {
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	pthread_mutex_lock(&out);
	printf("thread %ld %s user_ns %lld sys_ns %lld\n", (long)syscall(SYS_gettid), name,
	       (long long)ru.ru_utime.tv_sec * 1000000000LL + ru.ru_utime.tv_usec * 1000LL,
	       (long long)ru.ru_stime.tv_sec * 1000000000LL + ru.ru_stime.tv_usec * 1000LL);
	fflush(stdout);
	pthread_mutex_unlock(&out);
}

__attribute__((noinline)) void copy_bytes(int in, int nul) {
	char c;
	for (int i = 0; i < 1000; i++) {
		if (read(in, &c, 1) != 1 || write(nul, &c, 1) != 1)
			exit(1);
	}
}

static void *sys_thread(void *arg) {
	(void)arg;
	prctl(PR_SET_NAME, "sys");
	int in = open("/dev/zero", O_RDONLY), nul = open("/dev/null", O_WRONLY);
	if (in < 0 || nul < 0)
		exit(1);
	while (thread_cpu_ns() < seconds * 1e9)
		copy_bytes(in, nul);
	report("sys");
	return NULL;
}

__attribute__((noinline)) void compute(void) {
	unsigned long x = sink;
	for (int i = 0; i < 100000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

static void *user_thread(void *arg) {
	(void)arg;
	prctl(PR_SET_NAME, "user");
	while (thread_cpu_ns() < seconds * 1e9)
		compute();
	report("user");
	return NULL;
}

int main(int argc, char **argv) {
	seconds = argc > 1 ? atof(argv[1]) : 1;
	pthread_t s, u;
	pthread_create(&s, NULL, sys_thread, NULL);
	pthread_create(&u, NULL, user_thread, NULL);
	pthread_join(s, NULL);
	pthread_join(u, NULL);
	return 0;
}
