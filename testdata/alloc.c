/* alloc: grows its resident memory to 200 MB in 20 steps of 10 MB.
 *
 * After each step (pages written, so resident) it prints
 *   step N rss_bytes R
 * with R from /proc/self/statm, then holds still for 250 ms so that a
 * sampler sees the plateau (gprof's counters are read every interval, but
 * their reader was once seen held up for over 100 ms on a quiet machine).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long rss(void) {
	long size, res;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f || fscanf(f, "%ld %ld", &size, &res) != 2)
		exit(1);
	fclose(f);
	return (long long)res * sysconf(_SC_PAGESIZE);
}

int main(void) {
	for (int i = 1; i <= 20; i++) {
		char *p = malloc(10 << 20);
		if (!p)
			return 1;
		memset(p, i, 10 << 20);
		printf("step %d rss_bytes %lld\n", i, rss());
		fflush(stdout);
		struct timespec ts = {0, 250000000};
		nanosleep(&ts, NULL);
	}
	return 0;
}
