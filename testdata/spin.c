/* spin: a long-running target for attach tests.
 *
 * Usage: spin
 * The main thread burns CPU forever in spin_main. On SIGUSR1 it starts a
 * second busy thread (spin_late), so tests can check that threads created
 * after attaching are sampled. It prints "ready" once running.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile sig_atomic_t start_late;

__attribute__((noinline)) void burn(void) {
	unsigned long x = sink;
	for (int i = 0; i < 100000; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	sink = x;
}

__attribute__((noinline)) void *spin_late(void *arg) {
	(void)arg;
	for (;;)
		burn();
	return NULL;
}

static void on_usr1(int sig) { (void)sig; start_late = 1; }

__attribute__((noinline)) void spin_main(void) {
	int started = 0;
	for (;;) {
		burn();
		if (start_late && !started) {
			pthread_t t;
			pthread_create(&t, NULL, spin_late, NULL);
			started = 1;
		}
	}
}

int main(void) {
	/* Die with the test that started us, even if it is killed. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGUSR1, on_usr1);
	printf("ready\n");
	fflush(stdout);
	spin_main();
	return 0;
}
