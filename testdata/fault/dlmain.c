/* dlmain: loads a library from a temporary copy, burns CPU in it, unloads
 * it and deletes the copy, then burns a little more CPU in its own code.
 *
 * Usage: dlmain LIB COPY SECONDS
 * Copies LIB to COPY, dlopen()s COPY, calls dlib_burn(SECONDS), dlclose()s
 * it and unlinks COPY. Prints "unmapped" if COPY is no longer in
 * /proc/self/maps afterwards, "still mapped" otherwise.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void after_unload(double seconds) {
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

static int copy(const char *from, const char *to) {
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	if (!in || !out)
		return -1;
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			return -1;
	fclose(in);
	return fclose(out);
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: dlmain LIB COPY SECONDS\n");
		return 2;
	}
	double seconds = atof(argv[3]);
	if (copy(argv[1], argv[2]) != 0) {
		perror("copy");
		return 1;
	}
	void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	void (*burn)(double) = (void (*)(double))dlsym(h, "dlib_burn");
	if (!burn) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
	burn(seconds);
	dlclose(h);
	unlink(argv[2]);
	after_unload(seconds + 0.2);

	FILE *maps = fopen("/proc/self/maps", "r");
	char line[4096];
	int mapped = 0;
	while (maps && fgets(line, sizeof line, maps))
		if (strstr(line, argv[2]))
			mapped = 1;
	printf(mapped ? "still mapped\n" : "unmapped\n");
	return 0;
}
