/* The C program the objfile tests compile with MinGW and clang. No
 * #include, so that clang can compile it for macOS without an SDK. */
int printf(const char *, ...);

#ifdef _WIN32
#define EXPORT __attribute__((dllexport))
#else
#define EXPORT
#endif

volatile int sink;

static inline __attribute__((always_inline)) int sq(int x) {
	sink = x;
	return x * x;
}

__attribute__((noinline)) int work(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += sq(i);
	return s;
}

EXPORT int exported(int n) { return work(n) + 1; }

int main(void) {
	printf("%d\n", work(1000));
	return 0;
}
