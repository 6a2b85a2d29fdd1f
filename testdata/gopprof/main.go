// Command gopprof writes a Go CPU profile (runtime/pprof) of a known split:
// main.hot does twice the work of main.warm. Usage: gopprof OUT.pprof
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

var sink uint64

//go:noinline
func spin(n int) uint64 {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func hot() { sink = spin(2 << 20) }

//go:noinline
func warm() { sink = spin(1 << 20) }

func main() {
	f, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	start := time.Now()
	for time.Since(start) < 600*time.Millisecond {
		hot()
		warm()
	}
	pprof.StopCPUProfile()
	f.Close()
}
