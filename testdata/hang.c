/* hang: a program that hangs, for gprof dump.
 *
 * Three threads that never end, each stuck its own way: the main thread
 * sleeps, "waiter" waits on a condition nobody signals, "spinner" spins.
 * It prints "ready" once they all run. Each function a test looks for is
 * kept out of line.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile unsigned long sink;
static volatile int started;

__attribute__((noinline)) static void wait_for_signal(void) {
	pthread_mutex_lock(&mu);
	started++;
	for (;;)
		pthread_cond_wait(&cv, &mu); /* hangs here */
}

__attribute__((noinline)) static void *waiter(void *arg) {
	wait_for_signal();
	return arg;
}

__attribute__((noinline)) static void spin_forever(void) {
	__atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
	for (;;)
		sink = sink * 3 + 1; /* spins here */
}

__attribute__((noinline)) static void *spinner(void *arg) {
	spin_forever();
	return arg;
}

__attribute__((noinline)) static void sleep_forever(void) {
	for (;;)
		sleep(100); /* hangs here */
}

int main(void) {
	pthread_t a, b;
	pthread_create(&a, 0, waiter, 0);
	pthread_setname_np(a, "waiter");
	pthread_create(&b, 0, spinner, 0);
	pthread_setname_np(b, "spinner");
	while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < 2)
		usleep(1000);
	usleep(20000); /* the waiter into its wait */
	printf("ready\n");
	fflush(stdout);
	sleep_forever();
}
