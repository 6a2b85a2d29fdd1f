/* deep: spins at the bottom of a recursion about 24 KiB deep, more than
 * gprof's default 16 KiB stack copy holds and less than the 64 KiB one.
 *
 * Usage: deep SECONDS
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static double seconds;

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void spin(void) {
	double end = now() + seconds;
	while (now() < end)
		for (int i = 0; i < 10000; i++)
			sink += i;
}

/* Each level keeps 240 bytes live across the call, so the frames cannot
 * be merged or elided. */
__attribute__((noinline)) void descend(int depth) {
	volatile char pad[240];
	pad[depth % sizeof pad] = (char)depth;
	if (depth > 0)
		descend(depth - 1);
	else
		spin();
	sink += pad[0];
}

int main(int argc, char **argv) {
	seconds = argc > 1 ? atof(argv[1]) : 0.5;
	descend(96);
	return 0;
}
