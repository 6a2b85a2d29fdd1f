/* dlthread: one thread loads a library that another thread then runs, for
 * recording that other thread alone (-t): the mapping is made by a thread
 * that is not recorded.
 *
 * Usage: dlthread LIB
 * Prints "ready" and burns CPU in main_burn on the main thread. On
 * SIGUSR1 a second thread dlopen()s LIB and hands dlib_hot to the main
 * thread, which from then on burns in it instead; it prints "loaded".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile sig_atomic_t asked;
static void (*volatile hot)(void);

static void on_usr1(int sig) { (void)sig; asked = 1; }

__attribute__((noinline)) void main_burn(void) {
	unsigned long x = sink;
	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

static void *loader(void *lib) {
	while (!asked)
		usleep(1000);
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return NULL;
	}
	hot = (void (*)(void))dlsym(h, "dlib_hot");
	printf("loaded\n");
	fflush(stdout);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 2)
		return 2;
	signal(SIGUSR1, on_usr1);
	pthread_t t;
	pthread_create(&t, NULL, loader, argv[1]);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		void (*f)(void) = hot;
		if (f)
			f();
		else
			main_burn();
	}
}
