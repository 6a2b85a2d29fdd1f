//go:build windows

package attach

import (
	"context"
	"fmt"
)

// recordETW is the ETW backend when it is built in (etw_windows.go sets
// it). It must fail before emitting anything when ETW is denied (no
// administrator rights: an error wrapping ErrPermission) or delivers no
// events (Wine's StartTraceW succeeds and delivers nothing): the default
// backend then falls back to suspend with a one-line notice.
var recordETW func(ctx context.Context, opts Options, h Handler) (Result, error)

func record(ctx context.Context, opts Options, h Handler) (Result, error) {
	if (len(opts.Pids)+len(opts.Tids) == 0) == (len(opts.Command) == 0) {
		return Result{ExitCode: -1}, fmt.Errorf("record: exactly one of Pids (or Tids) and Command must be set")
	}
	switch opts.Backend {
	case "suspend":
		return recordSuspend(ctx, opts, h)
	case "etw":
		if recordETW == nil {
			return Result{ExitCode: -1}, fmt.Errorf("the etw backend is not in this build; use --backend suspend: %w", ErrUnsupported)
		}
		return recordETW(ctx, opts, h)
	case "":
	default:
		return Result{ExitCode: -1}, fmt.Errorf("unknown backend %q (Windows has etw and suspend)", opts.Backend)
	}
	if recordETW != nil {
		res, err := recordETW(ctx, opts, h)
		if err == nil || !etwUnavailable(err) {
			return res, err
		}
		if opts.Notice != nil {
			opts.Notice(fmt.Sprintf("ETW sampling unavailable (%v); using the suspend backend", err))
		}
	}
	return recordSuspend(ctx, opts, h)
}
