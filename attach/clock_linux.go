//go:build linux

package attach

import "golang.org/x/sys/unix"

// MonotonicNow returns CLOCK_MONOTONIC in nanoseconds, the clock of every
// event time on Linux, so callers can relate event times to wall clock.
func MonotonicNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
