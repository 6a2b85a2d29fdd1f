// Command gocaller is the shape that loses callers in stripped Go binaries:
// caller calls a hot frameless leaf, heavy, and then an inlinable mix, so
// the return address into caller is the first instruction of the inlined
// mix. Every sample in heavy has the stack main.main;main.caller;main.heavy.
package main

import (
	"fmt"
	"time"
)

var sink uint64

//go:noinline
func heavy(x uint64) uint64 {
	for i := 0; i < 1<<20; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

func mix(x uint64) uint64 { return x ^ x>>29 }

//go:noinline
func caller(x uint64) uint64 {
	x = heavy(x)
	return mix(x)
}

func main() {
	start := time.Now()
	for time.Since(start) < 600*time.Millisecond {
		sink = caller(sink + 1)
	}
	fmt.Println(sink != 0)
}
