//go:build linux

package event

import "golang.org/x/sys/unix"

// Now returns CLOCK_MONOTONIC in nanoseconds, the clock of every event
// time on Linux, so callers can relate event times to wall clock.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
