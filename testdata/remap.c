/* remap: makes a second copy of its own executable text at an address the
 * kernel picks, and runs a function there, as V8 does with node's embedded
 * builtins. A profiler must name the copy like the original.
 *
 * Usage: remap [N [file|anon]]
 * file (default): maps the text again from the file, at the same file
 * offset, as V8 does by default. anon: copies the text into anonymous
 * memory, as V8 does when node's own text is in anonymous huge pages
 * (node --use-largepages=on).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A leaf with no calls and no data references, so that it runs the same
 * from any address. */
__attribute__((noinline, noclone)) long remapped_work(long n) {
	long x = 0;
	for (long i = 0; i < n; i++) {
		x = x * 31 + i;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

struct found {
	uintptr_t addr;
	uintptr_t mem; /* where the segment's first page is in memory */
	off_t off;   /* file offset of addr */
	off_t seg;   /* page-aligned file offset of its segment */
	size_t len;  /* bytes of the segment from seg */
};

static int find(struct dl_phdr_info *info, size_t size, void *data) {
	struct found *f = data;
	(void)size;
	if (info->dlpi_name[0] != '\0') /* the executable comes first, unnamed */
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + p->p_vaddr;
		if (p->p_type != PT_LOAD || f->addr < lo || f->addr >= lo + p->p_filesz)
			continue;
		f->off = p->p_offset + (f->addr - lo);
		f->mem = lo - (p->p_offset & 4095);
		f->seg = p->p_offset & ~(off_t)4095;
		f->len = p->p_filesz + (p->p_offset - f->seg);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 400000000L;
	struct found f = {.addr = (uintptr_t)remapped_work};
	if (!dl_iterate_phdr(find, &f)) {
		fprintf(stderr, "remap: text segment not found\n");
		return 1;
	}
	char *copy;
	if (argc > 2 && strcmp(argv[2], "anon") == 0) {
		/* V8 maps the region executable from the start, which is when
		 * a profiler hears of it, and fills it afterwards. */
		copy = mmap(NULL, f.len, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (copy == MAP_FAILED) {
			perror("remap: mmap");
			return 1;
		}
		usleep(300000); /* let the profiler see it empty first */
		memcpy(copy, (void *)f.mem, f.len);
		mprotect(copy, f.len, PROT_READ | PROT_EXEC);
	} else {
		int fd = open("/proc/self/exe", O_RDONLY);
		copy = mmap(NULL, f.len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, f.seg);
		if (fd < 0 || copy == MAP_FAILED) {
			perror("remap: mmap");
			return 1;
		}
	}
	long (*fn)(long) = (long (*)(long))(copy + (f.off - f.seg));
	printf("%p -> %p: %ld\n", (void *)f.addr, (void *)fn, fn(n));
	return 0;
}
