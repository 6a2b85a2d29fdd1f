//go:build !linux

package attach

import "time"

var monoBase = time.Now()

// MonotonicNow returns the current time in nanoseconds on the clock event
// times use. Outside Linux this is a process-local monotonic clock
// (nanoseconds since the package was initialized).
func MonotonicNow() int64 { return int64(time.Since(monoBase)) }
