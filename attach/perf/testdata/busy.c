// busy: CPU-bound threads for gprof's attach tests.
//
//   busy OUT MS      main and one worker thread each burn MS ms of CPU in
//                    spin() (called through work()), then write
//                    "tid cpu_ns" per thread to OUT.
//   busy --forever   main burns CPU until killed; each SIGUSR1 starts a
//                    thread "late" that burns 300 ms of CPU and exits.
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static volatile unsigned long sink;
static volatile sig_atomic_t want_thread;

static long long thread_cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// The volatile local gives spin a stack frame, so gcc sets up the frame
// pointer and a frame-pointer walk finds spin's caller.
__attribute__((noinline)) void spin(void) {
	volatile unsigned long local = 0;
	for (int i = 0; i < 200000; i++)
		local += i;
	sink += local;
}

__attribute__((noinline)) void work(long long ns) {
	long long end = thread_cpu_ns() + ns;
	while (thread_cpu_ns() < end)
		spin();
}

struct result {
	int tid;
	long long cpu;
};

static long long burn_ms;
static struct result worker_result;

static void *worker(void *arg) {
	(void)arg;
	pthread_setname_np(pthread_self(), "worker");
	work(burn_ms * 1000000LL);
	worker_result.tid = (int)syscall(SYS_gettid);
	worker_result.cpu = thread_cpu_ns();
	return NULL;
}

static void *late(void *arg) {
	(void)arg;
	pthread_setname_np(pthread_self(), "late");
	work(300 * 1000000LL);
	return NULL;
}

static void on_usr1(int sig) {
	(void)sig;
	want_thread = 1;
}

int main(int argc, char **argv) {
	if (argc == 2 && strcmp(argv[1], "--forever") == 0) {
		signal(SIGUSR1, on_usr1);
		for (;;) {
			work(10 * 1000000LL);
			if (want_thread) {
				want_thread = 0;
				pthread_t t;
				pthread_create(&t, NULL, late, NULL);
				pthread_detach(t);
			}
		}
	}
	if (argc != 3) {
		fprintf(stderr, "usage: busy OUT MS | busy --forever\n");
		return 2;
	}
	// The main thread's CPU clock counts from before the exec (the task is
	// the same); measure from here.
	long long main_start = thread_cpu_ns();
	burn_ms = atoll(argv[2]);
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	work(burn_ms * 1000000LL);
	long long main_cpu = thread_cpu_ns() - main_start;
	pthread_join(t, NULL);
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "%d %lld\n%d %lld\n", getpid(), main_cpu, worker_result.tid, worker_result.cpu);
	fclose(f);
	return 3; // a distinctive exit code
}
