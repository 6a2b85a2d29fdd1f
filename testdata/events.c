// events: a program with known numbers of the events gprof record -e
// samples, and phases it marks, for the end-to-end tests of events beyond
// CPU time (e2e/events_test.go). Each mode prints its own count of what
// it did, which the tests hold the profiles to:
//
//	events faults N       touch N fresh pages in touch_pages
//	events opens N        N openat calls in open_files
//	events switches N     N round trips over two pipes between two threads
//	                      (ping, pong), each thread blocking in read: prints
//	                      the threads' context switches (getrusage)
//	events phases X Y DIR one thread busy X ms of its CPU time in
//	                      serial_phase, then 4 threads Y ms each in
//	                      parallel_phase; marks both phases in
//	                      DIR/marker-PID.txt, which it maps (samply's
//	                      convention), and prints each phase's wall time;
//	                      with EVENTS_WAIT=FILE, waits for FILE first
//	events usdt N         N passes by the USDT probe gprof_test:tick, which
//	                      has a semaphore: prints how many passes saw it
//	                      set (a tracer attached), and whether the last
//	                      pass saw it set (a tracer left it on); says
//	                      "probe on" when it first sees it set; with
//	                      EVENTS_STOP=FILE, passes until FILE exists
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static volatile unsigned long sink;

__attribute__((noinline)) static void touch_pages(long n) {
	long ps = sysconf(_SC_PAGESIZE);
	char *p = mmap(0, n * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	// One fault per page: no transparent huge page makes one fault of
	// 512.
	madvise(p, n * ps, MADV_NOHUGEPAGE);
	for (long i = 0; i < n; i++)
		p[i * ps] = 1;
	printf("touched %ld pages\n", n);
}

__attribute__((noinline)) static void open_files(long n) {
	long ok = 0;
	for (long i = 0; i < n; i++) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd >= 0) {
			ok++;
			close(fd);
		}
	}
	printf("opened %ld files\n", ok);
}

static int ab[2], ba[2];
static long rounds;

static long switches(void) {
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

static long pong_switches;

__attribute__((noinline)) static void *pong(void *arg) {
	(void)arg;
	long before = switches();
	char c;
	for (long i = 0; i < rounds; i++) {
		if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
			exit(1);
	}
	pong_switches = switches() - before;
	return 0;
}

__attribute__((noinline)) static void ping(long n) {
	pthread_t t;
	rounds = n;
	if (pipe(ab) || pipe(ba) || pthread_create(&t, 0, pong, 0))
		exit(1);
	long before = switches();
	char c = 'x';
	for (long i = 0; i < n; i++) {
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			exit(1);
	}
	long mine = switches() - before;
	pthread_join(t, 0);
	printf("round trips %ld switches ping %ld pong %ld\n", n, mine, pong_switches);
}

static void spin_cpu(long ms) {
	long long end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ms * 1000000LL;
	while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 1000; i++)
			sink += i;
}

// The empty asm after each call keeps it a call (not a jump to spin_cpu
// that would leave the phase's function off the stack).
__attribute__((noinline)) static void serial_phase(long ms) {
	spin_cpu(ms);
	__asm__ __volatile__("" ::: "memory");
}

static long parallel_ms;

__attribute__((noinline)) static void *parallel_phase(void *arg) {
	(void)arg;
	spin_cpu(parallel_ms);
	__asm__ __volatile__("" ::: "memory");
	return 0;
}

static void phases(long x, long y, const char *dir) {
	char path[4096];
	snprintf(path, sizeof path, "%s/marker-%d.txt", dir, getpid());
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	// Mapped so that a profiler sees the file among the mappings.
	void *m = mmap(0, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	// With EVENTS_WAIT set, wait for that file: a profiler attaches.
	const char *wait = getenv("EVENTS_WAIT");
	while (wait && access(wait, F_OK) != 0)
		usleep(1000);
	long long t0 = now_ns(CLOCK_MONOTONIC);
	serial_phase(x);
	long long t1 = now_ns(CLOCK_MONOTONIC);
	parallel_ms = y;
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], 0, parallel_phase, 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], 0);
	long long t2 = now_ns(CLOCK_MONOTONIC);
	dprintf(fd, "%lld %lld serial\n%lld %lld parallel\n", t0, t1, t1, t2);
	close(fd);
	printf("serial_wall_ns %lld parallel_wall_ns %lld\n", t1 - t0, t2 - t1);
}

// A USDT probe, as <sys/sdt.h> lays it out (a note in .note.stapsdt: the
// probe's address, the link-time address of .stapsdt.base, the
// semaphore's address, then provider, name and argument strings), written
// out here so that the test needs no systemtap headers.
unsigned short gprof_test_tick_semaphore __attribute__((section(".probes"), used));

#define TICK_PROBE()                                                                       \
	__asm__ __volatile__("990: nop\n"                                                    \
			     ".pushsection .note.stapsdt,\"?\",\"note\"\n"                   \
			     ".balign 4\n"                                                   \
			     ".4byte 992f-991f, 994f-993f, 3\n"                              \
			     "991: .asciz \"stapsdt\"\n"                                     \
			     "992: .balign 4\n"                                              \
			     "993: .8byte 990b\n"                                            \
			     ".8byte _.stapsdt.base\n"                                       \
			     ".8byte gprof_test_tick_semaphore\n"                            \
			     ".asciz \"gprof_test\"\n"                                       \
			     ".asciz \"tick\"\n"                                             \
			     ".asciz \"\"\n"                                                 \
			     "994: .balign 4\n"                                              \
			     ".popsection\n"                                                 \
			     ".ifndef _.stapsdt.base\n"                                      \
			     ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n" \
			     ".weak _.stapsdt.base\n"                                        \
			     ".hidden _.stapsdt.base\n"                                      \
			     "_.stapsdt.base: .space 1\n"                                    \
			     ".size _.stapsdt.base, 1\n"                                     \
			     ".popsection\n"                                                 \
			     ".endif\n")

__attribute__((noinline)) static void ticks(long n) {
	// With EVENTS_STOP=FILE, pass until FILE exists.
	const char *stop = getenv("EVENTS_STOP");
	long seen = 0, i;
	for (i = 0; stop ? access(stop, F_OK) != 0 : i < n; i++) {
		if (gprof_test_tick_semaphore && !seen++) {
			printf("probe on\n");
			fflush(stdout);
		}
		TICK_PROBE();
		usleep(100);
	}
	// Set on the last pass: a tracer left the probe on.
	printf("ticks %ld semaphore_set %ld last_set %d\n", i, seen, gprof_test_tick_semaphore != 0);
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: events faults|opens|switches|usdt N, or events phases X_MS Y_MS DIR\n");
		return 2;
	}
	long n = atol(argv[2]);
	if (!strcmp(argv[1], "faults"))
		touch_pages(n);
	else if (!strcmp(argv[1], "opens"))
		open_files(n);
	else if (!strcmp(argv[1], "switches"))
		ping(n);
	else if (!strcmp(argv[1], "usdt"))
		ticks(n);
	else if (!strcmp(argv[1], "phases") && argc == 5)
		phases(n, atol(argv[3]), argv[4]);
	else
		return 2;
	return 0;
}
