// lazy calls two libc functions through their PLT slots in a loop. Run
// with LD_BIND_NOT=1, the dynamic loader never fills the slots in, so
// every call goes through glibc's lazy-binding trampoline
// (_dl_runtime_resolve_*), which keeps its CFA in rbx: most samples land
// in the trampoline or the symbol lookup it calls.
#include <stdlib.h>
#include <string.h>

volatile long sink;

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 3000000;
	char buf[64] = "12345";
	for (long i = 0; i < n; i++)
		sink += strlen(buf) + labs(-i);
	return 0;
}
