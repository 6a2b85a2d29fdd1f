//go:build !linux

package event

import "time"

var monoBase = time.Now()

// Now returns the current time in nanoseconds on the clock event times
// use. Outside Linux this is a process-local monotonic clock (nanoseconds
// since the package was initialized).
func Now() int64 { return int64(time.Since(monoBase)) }
