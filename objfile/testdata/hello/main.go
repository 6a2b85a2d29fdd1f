// Command hello is the Go program the objfile tests cross-build for
// darwin and windows.
package main

import (
	"fmt"
	"os"
)

//go:noinline
func work(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i
	}
	return s
}

func main() {
	fmt.Println(work(len(os.Args) * 1000))
}
