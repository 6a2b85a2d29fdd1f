// exitgroup: forks N children (argv[1], 50 by default) one after another;
// each starts three threads that spin and exits from main after 3 ms of
// its own busy loop, so that the threads are sampled on their way out
// after the leader has gone (exit_group ends the leader first).
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *spin(void *a) {
	volatile unsigned long x = 0;
	for (;;)
		x++;
	return a;
}

static void busy(long ns) {
	struct timespec t0, t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec < ns);
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 50;
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p == 0) {
			pthread_t th;
			for (int k = 0; k < 3; k++)
				pthread_create(&th, 0, spin, 0);
			busy(3000000);
			exit(0);
		}
		waitpid(p, 0, 0);
	}
	return 0;
}
