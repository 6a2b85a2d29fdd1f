//go:build windows

package attach

import "context"

// platformBackends: ETW. (The suspend-and-walk fallback for users without
// the profiling privilege plugs in here as a second backend.)
var platformBackends = []Backend{ETW}

func start(ctx context.Context, b Backend, opts Options, h Handler) (Result, error) {
	return etwRecord(ctx, opts, h)
}

func resolveTargets(*Options) error { return nil }
