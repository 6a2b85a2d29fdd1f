package attach

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Backend names a way of sampling threads. The zero value, Auto, picks the
// platform's best backend and falls back to the next when it cannot run
// here (on Linux: perf events, then ptrace).
type Backend string

const (
	Auto    Backend = ""
	Perf    Backend = "perf"    // Linux perf_event_open
	Ptrace  Backend = "ptrace"  // Linux ptrace and timers, where perf is denied
	Mach    Backend = "mach"    // macOS task and thread ports
	ETW     Backend = "etw"     // Windows kernel trace session
	Suspend Backend = "suspend" // Windows: suspend each thread, read it, resume (no privilege needed)
)

// Backends lists the backends this platform has, best first; Auto tries
// them in this order.
func Backends() []Backend { return slices.Clone(platformBackends) }

// ParseBackend checks a backend name a user gave: "" for Auto, else one of
// Backends.
func ParseBackend(name string) (Backend, error) {
	if name == "" {
		return Auto, nil
	}
	if b := Backend(name); slices.Contains(platformBackends, b) {
		return b, nil
	}
	if len(platformBackends) == 0 {
		return Auto, fmt.Errorf("unknown backend %q: this platform has none yet", name)
	}
	names := make([]string, len(platformBackends))
	for i, b := range platformBackends {
		names[i] = string(b)
	}
	return Auto, fmt.Errorf("unknown backend %q (want %s)", name, strings.Join(names, " or "))
}

// unavailableError is a backend's report that it cannot run here at all
// (no permission, no kernel support), made before it touched any target,
// so that Auto may go on to the next backend.
type unavailableError struct {
	err error
	// what the backend needed and did not get, for the fallback notice.
	what, why string
	// notices the backend had for the user; shown only on fallback.
	notices []string
}

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// record is the one place a backend is chosen: it checks the options once,
// then runs the backend asked for or, for Auto, the first of Backends that
// is available.
func record(ctx context.Context, opts Options, h Handler) (Result, error) {
	if (len(opts.Pids)+len(opts.Tids) == 0) == (len(opts.Command) == 0) {
		return Result{ExitCode: -1}, fmt.Errorf("record: exactly one of Pids (or Tids) and Command must be set")
	}
	if len(platformBackends) == 0 {
		return Result{ExitCode: -1}, ErrUnsupported
	}
	if err := resolveTargets(&opts); err != nil {
		return Result{ExitCode: -1}, err
	}
	if _, err := ParseBackend(string(opts.Backend)); err != nil {
		return Result{ExitCode: -1}, err
	}
	tries := platformBackends
	if opts.Backend != Auto {
		tries = []Backend{opts.Backend}
	}
	notify := opts.Notice
	if notify == nil {
		notify = func(string) {}
	}
	for i, b := range tries {
		res, err := start(ctx, b, opts, h)
		var ue *unavailableError
		if !errors.As(err, &ue) {
			return res, err
		}
		if i == len(tries)-1 {
			return res, ue.err
		}
		for _, n := range ue.notices {
			notify(n)
		}
		notify(fmt.Sprintf("%s are not available (%s); using the %s backend", ue.what, ue.why, tries[i+1]))
	}
	panic("unreachable")
}
