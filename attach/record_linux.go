//go:build linux

package attach

import (
	"context"
	"fmt"
)

func record(ctx context.Context, opts Options, h Handler) (Result, error) {
	if (len(opts.Pids) == 0) == (len(opts.Command) == 0) {
		return Result{ExitCode: -1}, fmt.Errorf("record: exactly one of Pids and Command must be set")
	}
	switch opts.Backend {
	case "ptrace":
		return recordPtrace(ctx, opts, h)
	case "", "perf":
	default:
		return Result{ExitCode: -1}, fmt.Errorf("unknown backend %q (want perf or ptrace)", opts.Backend)
	}
	return recordPerf(ctx, opts, h)
}
