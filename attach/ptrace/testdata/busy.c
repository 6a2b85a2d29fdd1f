// Two threads that burn CPU in spin() until the time given as the first
// argument (seconds, 0 = forever) is up, then exit with the second
// argument as status. Built with frame pointers so the tests can check the
// copied stack by walking them.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static double limit;

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void spin(void) {
	double end = now() + limit;
	for (;;) {
		for (int i = 0; i < 100000; i++)
			sink += i;
		if (limit > 0 && now() >= end)
			return;
	}
}

static void *worker(void *arg) {
	pthread_setname_np(pthread_self(), "busy-worker");
	spin();
	return arg;
}

int main(int argc, char **argv) {
	limit = argc > 1 ? atof(argv[1]) : 0;
	int code = argc > 2 ? atoi(argv[2]) : 0;
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	spin();
	pthread_join(t, NULL);
	return code;
}
