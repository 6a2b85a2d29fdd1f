// capture.c: records a real x64 Windows stack for unwind's .pdata tests.
// f1 -> f2 -> f3 -> f4: each function stores its own return address, and
// f4 captures its context with RtlCaptureContext and copies the stack from
// RSP up. The test unwinds the copy and must find the stored addresses.
// f1 allocates a large frame (UWOP_ALLOC_LARGE), f2 uses alloca and so a
// frame pointer (UWOP_SET_FPREG), f3 saves nonvolatile registers.
//
// Build: x86_64-w64-mingw32-gcc -O2 -Wl,--build-id -o capture.exe capture.c
// Run:   wine64 capture.exe capture.bin
#include <windows.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

volatile unsigned long long ras[4];
volatile int sink;
static CONTEXT ctx;
static unsigned char copy[16384];
static const char *out;

__attribute__((noinline)) static void f4(void) {
	ras[3] = (unsigned long long)__builtin_return_address(0);
	RtlCaptureContext(&ctx);
	NT_TIB *tib = (NT_TIB *)NtCurrentTeb();
	size_t n = (size_t)((char *)tib->StackBase - (char *)ctx.Rsp);
	if (n > sizeof copy) n = sizeof copy;
	memcpy(copy, (void *)ctx.Rsp, n);
	FILE *f = fopen(out, "wb");
	unsigned long long hdr[4] = {ctx.Rip, ctx.Rsp, ctx.Rbp, n};
	unsigned long long base = (unsigned long long)GetModuleHandleA(NULL);
	fwrite(&base, 8, 1, f);
	fwrite(hdr, 8, 4, f);
	fwrite((void *)ras, 8, 4, f);
	fwrite(copy, 1, n, f);
	fclose(f);
	sink++;
}

__attribute__((noinline)) static int f3(int a, int b, int c) {
	ras[2] = (unsigned long long)__builtin_return_address(0);
	int x = a * b, y = b * c, z = a * c;
	f4();
	return x + y + z + sink;
}

__attribute__((noinline)) static int f2(int n) {
	ras[1] = (unsigned long long)__builtin_return_address(0);
	volatile char *p = alloca(n);
	p[0] = 1;
	int r = f3(n, p[0], 3);
	return r + p[0];
}

__attribute__((noinline)) static int f1(void) {
	ras[0] = (unsigned long long)__builtin_return_address(0);
	volatile char big[8192];
	big[0] = 2;
	int r = f2(100 + big[0]);
	return r + big[100];
}

int main(int argc, char **argv) {
	if (argc < 2) return 2;
	out = argv[1];
	return f1() == 0 ? 1 : 0;
}
