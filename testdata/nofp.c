/* nofp: a program meant to be built with -O2 -fomit-frame-pointer, whose
 * hot code is reached through libc (qsort calling back into cmp), so only
 * DWARF CFI unwinding gives complete stacks.
 *
 * Usage: nofp THREADS SECONDS
 * The main thread and THREADS workers each run level1 -> level2 ->
 * sort_work -> qsort -> cmp until they have used SECONDS of CPU.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 4096

static double seconds;

static long long thread_cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) static int cmp(const void *a, const void *b) {
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	/* A little arithmetic so the comparator, not qsort, is the hot leaf. */
	for (int i = 0; i < 8; i++) {
		x = x * 2654435761u + 1;
		y = y * 2654435761u + 1;
	}
	return (x > y) - (x < y);
}

__attribute__((noinline)) static void sort_work(unsigned *v, unsigned seed) {
	for (int i = 0; i < N; i++)
		v[i] = seed = seed * 1103515245u + 12345u;
	qsort(v, N, sizeof v[0], cmp);
}

__attribute__((noinline)) static void level2(unsigned *v) {
	long long limit = (long long)(seconds * 1e9);
	for (unsigned seed = 1; thread_cpu_ns() < limit; seed++)
		sort_work(v, seed);
}

__attribute__((noinline)) static void level1(void) {
	unsigned *v = malloc(N * sizeof *v);
	level2(v);
	free(v);
}

static void *worker(void *arg) {
	(void)arg;
	level1();
	return NULL;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 1;
	seconds = argc > 2 ? atof(argv[2]) : 0.5;
	pthread_t *t = calloc(n, sizeof *t);
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	level1();
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	puts("done");
	return 0;
}
