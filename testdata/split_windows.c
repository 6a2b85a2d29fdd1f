/* split_windows: testdata/split.c for Windows (MinGW), with CreateThread.
 *
 * Usage: split_windows THREADS SECONDS
 * Starts THREADS worker threads (the main thread waits). Each worker calls
 * work_a, work_b and work_c with 5:3:2 units of identical work, until it has
 * used SECONDS of its own CPU time (GetThreadTimes). At exit it prints, per
 * worker, "thread TID cpu_ns N".
 *
 * Build: x86_64-w64-mingw32-gcc -O2 -Wl,--build-id -o split.exe split_windows.c
 */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long long sink;

static long long thread_cpu_ns(void) {
	FILETIME c, e, k, u;
	GetThreadTimes(GetCurrentThread(), &c, &e, &k, &u);
	ULARGE_INTEGER kk = {.LowPart = k.dwLowDateTime, .HighPart = k.dwHighDateTime};
	ULARGE_INTEGER uu = {.LowPart = u.dwLowDateTime, .HighPart = u.dwHighDateTime};
	return (long long)(kk.QuadPart + uu.QuadPart) * 100;
}

#define UNITS(n)                                                                  \
	do {                                                                      \
		unsigned long long x = sink;                                      \
		for (int i = 0; i < (n) * 20000; i++)                             \
			x = x * 6364136223846793005ULL + 1442695040888963407ULL; \
		sink = x;                                                         \
	} while (0)

__attribute__((noinline)) void work_a(int n) { UNITS(n); }
__attribute__((noinline)) void work_b(int n) { UNITS(n); }
__attribute__((noinline)) void work_c(int n) { UNITS(n); }

struct worker {
	HANDLE thread;
	double seconds;
	DWORD tid;
	long long cpu_ns;
};

static DWORD WINAPI run(LPVOID arg) {
	struct worker *w = arg;
	w->tid = GetCurrentThreadId();
	long long limit = (long long)(w->seconds * 1e9);
	/* The clock is read every 256 rounds (tens of ms): under Wine,
	 * GetThreadTimes reads /proc and costs enough to show. */
	for (unsigned r = 0; r % 256 || thread_cpu_ns() < limit; r++) {
		work_a(5);
		work_b(3);
		work_c(2);
	}
	w->cpu_ns = thread_cpu_ns();
	return 0;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 1;
	double secs = argc > 2 ? atof(argv[2]) : 1;
	struct worker *ws = calloc(n, sizeof *ws);
	for (int i = 0; i < n; i++) {
		ws[i].seconds = secs;
		ws[i].thread = CreateThread(NULL, 0, run, &ws[i], 0, NULL);
	}
	for (int i = 0; i < n; i++) {
		WaitForSingleObject(ws[i].thread, INFINITE);
		printf("thread %lu cpu_ns %lld\n", ws[i].tid, ws[i].cpu_ns);
	}
	return 0;
}
