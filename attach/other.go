//go:build !linux && !darwin && !windows

package attach

import "context"

// platformBackends: none on this platform yet.
var platformBackends []Backend

func start(context.Context, Backend, Options, Handler) (Result, error) {
	return Result{ExitCode: -1}, ErrUnsupported
}

func resolveTargets(*Options) error { return nil }
