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
	fmt.Println(work(len(os.Args) * 1000))
}
