/* forker: an attach target that forks children after being attached.
 *
 * Usage: forker
 * Prints "ready" and burns CPU in parent_burn forever. Each SIGUSR1 makes
 * it fork a child that burns 0.4 s of CPU time in child_burn and exits.
 * Children are reaped automatically (SIGCHLD is ignored).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile sig_atomic_t fork_asked;

static void on_usr1(int sig) { (void)sig; fork_asked = 1; }

__attribute__((noinline)) void child_burn(void) {
	struct timespec ts;
	unsigned long x = sink;
	for (;;) {
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
		if (ts.tv_sec > 0 || ts.tv_nsec >= 400000000L)
			break;
		/* Check the clock every few ms, not every few µs: a thread that
		 * makes syscalls that often under CPU contention gets few ptrace
		 * samples (stops at syscall returns are discarded, as perf does
		 * not sample kernel time), and this fixture is about forks. */
		for (int i = 0; i < 2000000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	}
	sink = x;
}

__attribute__((noinline)) void parent_burn(void) {
	unsigned long x = sink;
	for (int i = 0; i < 100000; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	sink = x;
}

int main(void) {
	signal(SIGCHLD, SIG_IGN);
	signal(SIGUSR1, on_usr1);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		parent_burn();
		if (fork_asked) {
			fork_asked = 0;
			if (fork() == 0) {
				child_burn();
				_exit(0);
			}
		}
	}
}
