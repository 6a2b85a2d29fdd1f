//go:build windows

package attach

import (
	"context"
	"fmt"
)

// record picks the Windows backend. etwRecord (etw_windows.go) is the ETW
// backend's hook.
func record(ctx context.Context, opts Options, h Handler) (Result, error) {
	switch opts.Backend {
	case "", "etw":
		return etwRecord(ctx, opts, h)
	}
	return Result{ExitCode: -1}, fmt.Errorf("%w: backend %q on Windows; use etw", ErrUnsupported, opts.Backend)
}
