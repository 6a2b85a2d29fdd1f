//go:build !linux

package attach

import (
	"context"
	"time"
)

// platformBackends: none on this platform yet.
var platformBackends []Backend

func start(context.Context, Backend, Options, Handler) (Result, error) {
	return Result{ExitCode: -1}, ErrUnsupported
}

func resolveTargets(*Options) error { return nil }

// ExecHelperMain must be the first statement of main. It returns at once
// unless this process is gprof's launch helper, which exists only on Linux.
func ExecHelperMain() {}

var monoBase = time.Now()

// MonotonicNow returns the current time in nanoseconds on the clock event
// times use. Without a native backend this is a process-local monotonic
// clock (nanoseconds since the package was initialized).
func MonotonicNow() int64 { return int64(time.Since(monoBase)) }
