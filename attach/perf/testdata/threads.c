// threads N [MS]: starts N short-lived threads, 10 at a time, each burning
// MS (default 2) ms of CPU.
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static long long burn_ns = 2000000LL;

static void *run(void *arg) {
	(void)arg;
	struct timespec ts;
	long long end;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	end = ts.tv_sec * 1000000000LL + ts.tv_nsec + burn_ns;
	do {
		for (int i = 0; i < 10000; i++)
			sink += i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	} while (ts.tv_sec * 1000000000LL + ts.tv_nsec < end);
	return NULL;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 500;
	if (argc > 2)
		burn_ns = atoll(argv[2]) * 1000000LL;
	pthread_t t[10];
	for (int done = 0; done < n; done += 10) {
		int k = n - done < 10 ? n - done : 10;
		for (int i = 0; i < k; i++)
			pthread_create(&t[i], NULL, run, NULL);
		for (int i = 0; i < k; i++)
			pthread_join(t[i], NULL);
	}
	return 0;
}
