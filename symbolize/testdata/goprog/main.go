package main

import (
	"fmt"
	"os"
)

//go:noinline
func work(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += inner(i)
	}
	return s
}

func inner(i int) int {
	return i*i + len(os.Args)
}

func main() {
	fmt.Println(work(len(os.Args)*1000), deep(len(os.Args)*1000), caller(len(os.Args)))
}

// deep inlines two levels, mid and then leaf, in its loop.
//
//go:noinline
func deep(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += mid(i)
	}
	return s
}

func mid(i int) int { return leaf(i)*3 + 1 }

func leaf(i int) int { return i ^ len(os.Args) }

// caller calls heavy, a frameless leaf, and then mix, inlined: its return
// address from heavy is the first instruction of the inlined mix.
//
//go:noinline
func caller(x int) int {
	x = heavy(x)
	return mix(x)
}

//go:noinline
func heavy(x int) int { return x*x + 7 }

func mix(x int) int { return x ^ x>>29 }
