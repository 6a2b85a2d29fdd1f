//go:build windows

package attach

import "context"

// platformBackends: ETW first; where it is denied (no administrator
// rights) or delivers nothing (Wine), the suspend-and-walk backend.
var platformBackends = []Backend{ETW, Suspend}

func start(ctx context.Context, b Backend, opts Options, h Handler) (Result, error) {
	if b == Suspend {
		return recordSuspend(ctx, opts, h)
	}
	res, err := etwRecord(ctx, opts, h)
	if err != nil && etwUnavailable(err) {
		// It failed before emitting anything (and killed a command it
		// had launched suspended): the dispatcher may try suspend.
		return res, &unavailableError{err: err, what: "ETW kernel sessions", why: err.Error()}
	}
	return res, err
}

func resolveTargets(*Options) error { return nil }
