// Sleeps for the milliseconds given as the first argument, then starts a
// thread named "late" that burns CPU forever; the main thread just waits.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void late_spin(void) {
	for (;;)
		sink++;
}

static void *late(void *arg) {
	pthread_setname_np(pthread_self(), "late");
	late_spin();
	return arg;
}

int main(int argc, char **argv) {
	usleep((argc > 1 ? atoi(argv[1]) : 300) * 1000);
	pthread_t t;
	pthread_create(&t, NULL, late, NULL);
	pthread_join(t, NULL);
	return 0;
}
