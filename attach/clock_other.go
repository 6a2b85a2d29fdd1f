//go:build !linux

package attach

import "time"

// ExecHelperMain must be the first statement of main. It returns at once
// unless this process is gprof's launch helper, which exists only on Linux.
func ExecHelperMain() {}

var monoBase = time.Now()

// MonotonicNow returns the current time in nanoseconds on the clock event
// times use. Outside Linux this is a process-local monotonic clock
// (nanoseconds since the package was initialized).
func MonotonicNow() int64 { return int64(time.Since(monoBase)) }
