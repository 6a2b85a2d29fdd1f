/* execer: burns CPU, then execs another program in place.
 *
 * Usage: execer SECONDS PROGRAM ARGS...
 * Prints "ready", burns SECONDS of CPU time in before_exec, then execv()s
 * PROGRAM with ARGS (ARGS[0] is the new argv[0]).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void before_exec(double seconds) {
	struct timespec ts;
	unsigned long x = sink;
	for (;;) {
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
		if ((double)ts.tv_sec + ts.tv_nsec / 1e9 >= seconds)
			break;
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	}
	sink = x;
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: execer SECONDS PROGRAM ARGV0 ARGS...\n");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	before_exec(atof(argv[1]));
	execv(argv[2], argv + 3);
	perror("execv");
	return 127;
}
