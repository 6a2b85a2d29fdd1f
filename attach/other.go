//go:build !linux && !darwin && !windows

package attach

import "context"

// record has no backend on this platform yet.
func record(ctx context.Context, opts Options, h Handler) (Result, error) {
	return Result{ExitCode: -1}, ErrUnsupported
}
