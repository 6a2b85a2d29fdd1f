#include <stdio.h>
#include <stdlib.h>

volatile int sink;

static inline __attribute__((always_inline)) int square(int x)
{
	sink += x;
	return x * x;
}

static inline __attribute__((always_inline)) int sum_squares(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += square(i + sink);
	return s;
}

__attribute__((noinline)) int work(int n)
{
	int r = sum_squares(n);
	sink = r;
	return r;
}

__attribute__((noinline)) int helper(int n)
{
	return work(n) + 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	printf("%d\n", helper(n));
	puts("done");
	return 0;
}
