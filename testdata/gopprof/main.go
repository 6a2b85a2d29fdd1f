// Command gopprof writes a Go CPU profile (runtime/pprof) of a known split:
// main.hot does twice the work of main.warm. Usage: gopprof OUT.pprof
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"syscall"
	"time"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

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
	// Until the process has used 1.5 s of CPU (about 150 samples at Go's
	// 100 Hz), not for a wall-clock time: a loaded machine must not leave
	// the profile with a handful of samples.
	for cpuTime() < 1500*time.Millisecond {
		hot()
		warm()
	}
	pprof.StopCPUProfile()
	f.Close()
}
