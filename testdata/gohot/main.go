// Command gohot burns about half a second of CPU in main.hot, so tests can
// check that Go functions are named in a profile.
package main

import (
	"fmt"
	"time"
)

var sink uint64

//go:noinline
func hot(n int) uint64 {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

func main() {
	start := time.Now()
	for time.Since(start) < 500*time.Millisecond {
		sink = hot(1 << 20)
	}
	fmt.Println(sink != 0)
}
