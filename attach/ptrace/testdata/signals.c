// Counts the real-time signals (SIGRTMIN+4) it receives while one thread
// burns CPU; on SIGTERM it prints the count and exits. Real-time signals
// queue instead of merging, so a signal the sampler swallowed would show
// up as a short count.
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t count;
static volatile unsigned long sink;

static void on_rt(int sig) { count++; }

static void on_term(int sig) {
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%d\n", (int)count);
	write(1, buf, n);
	_exit(0);
}

int main(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_rt;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGRTMIN + 4, &sa, NULL);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	// The test learns the signal number from here; SIGRTMIN depends on
	// the C library.
	printf("ready %d\n", SIGRTMIN + 4);
	fflush(stdout);
	for (;;)
		sink++;
}
