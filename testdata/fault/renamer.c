/* renamer: forks a child that renames itself (prctl PR_SET_NAME, as
 * worker processes do) and burns CPU under its new name.
 *
 * Usage: renamer NAME
 * The parent burns 100 ms of CPU, forks, and waits. The child sets its
 * name to NAME, then burns 400 ms of CPU in child_burn and exits.
 */
#define _GNU_SOURCE
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static long long cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline __attribute__((always_inline)) void burn(long long ns) {
	long long end = cpu_ns() + ns;
	while (cpu_ns() < end)
		for (int i = 0; i < 100000; i++)
			sink += i;
}

__attribute__((noinline)) void parent_burn(void) { burn(100000000LL); }
__attribute__((noinline)) void child_burn(void) { burn(400000000LL); }

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	parent_burn();
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_NAME, argv[1]);
		child_burn();
		_exit(0);
	}
	waitpid(pid, 0, 0);
	return 0;
}
