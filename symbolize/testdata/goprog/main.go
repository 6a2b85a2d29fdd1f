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
	fmt.Println(work(len(os.Args)*1000), deep(len(os.Args)*1000))
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
