/* dlib: a shared library that dlmain loads from a temporary copy. */
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void dlib_hot(void) {
	unsigned long x = sink;
	for (int i = 0; i < 20000; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	sink = x;
}

/* dlib_burn burns SECONDS of the calling thread's CPU time in dlib_hot. */
void dlib_burn(double seconds) {
	struct timespec ts;
	long long limit = (long long)(seconds * 1e9);
	for (;;) {
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		if ((long long)ts.tv_sec * 1000000000LL + ts.tv_nsec >= limit)
			break;
		dlib_hot();
	}
}
