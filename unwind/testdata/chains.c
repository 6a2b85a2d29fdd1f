// Test target for package unwind. Built with gcc -O2 -fomit-frame-pointer -g
// at test time. Each mode reaches a known call chain, prints "ready TID" and
// then either stops itself with SIGSTOP or spins until the test samples it.
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
// An empty asm after a call keeps the call from becoming a tail call.
#define KEEP() __asm__ volatile("" ::: "memory")

volatile long sink;

NOINLINE void announce(void) {
	printf("ready %d\n", gettid());
	fflush(stdout);
}

NOINLINE void stop_here(void) {
	announce();
	raise(SIGSTOP);
	KEEP();
}

// Mutual recursion: rec_vla keeps a variable-length array, so GCC gives it
// an rbp-based CFA; rec_plain has an rsp-based one.
NOINLINE int rec_plain(int n);

NOINLINE int rec_vla(int n) {
	volatile char buf[(n & 7) * 16 + 8];
	buf[0] = (char)n;
	int r = rec_plain(n - 1);
	KEEP();
	return r + buf[0];
}

NOINLINE int rec_plain(int n) {
	if (n <= 0) {
		stop_here();
		return 0;
	}
	int r = n & 1 ? rec_vla(n - 1) : rec_plain(n - 1);
	KEEP();
	return r + 1;
}

static int cmp_stopped;

NOINLINE int cmp_ints(const void *a, const void *b) {
	if (!cmp_stopped) {
		cmp_stopped = 1;
		stop_here();
	}
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

NOINLINE void do_qsort(void) {
	int a[256];
	for (int i = 0; i < 256; i++)
		a[i] = (i * 7919) % 257;
	qsort(a, 256, sizeof a[0], cmp_ints);
	sink += a[0];
}

NOINLINE void thread_leaf(void) {
	stop_here();
	KEEP();
}

NOINLINE void *thread_start(void *arg) {
	thread_leaf();
	KEEP();
	return arg;
}

NOINLINE void handler_leaf(void) {
	stop_here();
	KEEP();
}

NOINLINE void on_signal(int sig) {
	(void)sig;
	handler_leaf();
	KEEP();
}

NOINLINE void sig_inner(void) {
	raise(SIGUSR1);
	KEEP();
}

NOINLINE void sig_outer(void) {
	sig_inner();
	KEEP();
}

// spin_leaf is a frameless leaf where SIGALRM lands at arbitrary PCs.
NOINLINE void spin_leaf(void) {
	for (;;)
		sink++;
}

NOINLINE void spin_outer(void) {
	spin_leaf();
	KEEP();
}

static char buf[1 << 16];
static int small[32];

NOINLINE int cmp_small(const void *a, const void *b) {
	return *(const int *)a - *(const int *)b;
}

// busy alternates between its own code, libc leaves (memset), the vdso
// (clock_gettime), a libc callback (qsort) and PLT stubs, so that
// interrupts land in all of them.
NOINLINE void busy(void) {
	struct timespec ts;
	for (long i = 0;; i++) {
		memset(buf, (int)i, sizeof buf);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += ts.tv_nsec;
		for (int j = 0; j < 32; j++)
			small[j] = (j * 31 + (int)i) & 63;
		qsort(small, 32, sizeof small[0], cmp_small);
		sink += (long)strlen(buf + (i & 1023));
		for (int k = 0; k < 1000; k++)
			sink += k;
	}
}

NOINLINE void busy_outer(void) {
	busy();
	KEEP();
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "recurse";
	if (!strcmp(mode, "recurse")) {
		sink = rec_plain(40);
	} else if (!strcmp(mode, "qsort")) {
		do_qsort();
	} else if (!strcmp(mode, "thread")) {
		pthread_t t;
		pthread_create(&t, NULL, thread_start, NULL);
		pthread_join(t, NULL);
	} else if (!strcmp(mode, "signal")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigaction(SIGUSR1, &sa, NULL);
		sig_outer();
	} else if (!strcmp(mode, "alarm")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigaction(SIGALRM, &sa, NULL);
		struct itimerval it = {{0, 0}, {0, 20000}};
		setitimer(ITIMER_REAL, &it, NULL);
		spin_outer();
	} else if (!strcmp(mode, "busy")) {
		announce();
		busy_outer();
	}
	KEEP();
	return 0;
}
