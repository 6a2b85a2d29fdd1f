/* jit: generates a machine-code loop at run time, as a JIT compiler
 * would, announces it in /tmp/perf-PID.map (the format node
 * --perf-basic-prof writes), runs it for a while, and deletes the map when
 * it exits, so a profiler must read the map while the process lives.
 * x86-64 only.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
	/* mov rax, rdi; loop: dec rax; jnz loop; ret */
	static const unsigned char code[] = {0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3};
	unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
	                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	memcpy(mem, code, sizeof code);
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
	FILE *f = fopen(path, "w");
	fprintf(f, "%lx %zx jit_hot_loop\n", (unsigned long)mem, sizeof code);
	fclose(f);
	long (*fn)(long) = (long (*)(long))mem;
	for (int i = 0; i < 4; i++)
		fn(150000000L);
	unlink(path);
	return 0;
}
