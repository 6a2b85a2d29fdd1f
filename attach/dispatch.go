package attach

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gprof-dev/gprof/attach/internal/gcfloor"
	"github.com/gprof-dev/gprof/attach/internal/yield"
	"github.com/gprof-dev/gprof/event"
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

// A Driver is a backend as it registers itself with Register, from an
// init function of its package. Package attach/backends imports this
// platform's backend packages.
type Driver struct {
	Name Backend
	// Order places the backend among this platform's: Backends lists them,
	// and Auto tries them, lowest Order first.
	Order int
	// Start records as Record says, with opts already checked by the
	// dispatcher. An error made with Unavailable lets Auto go on to the
	// next backend.
	Start func(ctx context.Context, opts Options, h event.Handler) (Result, error)
	// SystemWide: the backend can record every process on the machine
	// (Options.SystemWide).
	SystemWide bool
	// Events: the backend samples the events of Options.Events beyond a
	// clock (page faults, tracepoints, probes...).
	Events bool
	// Settle, when set, waits until the backend holds no target thread
	// suspended and keeps it so (see Settle).
	Settle func()
	// Dump, when set, takes every thread's stack once (see Dump).
	Dump func(DumpOptions, event.Handler) (DumpResult, error)
	// Control: the backend applies Options.Control's changes itself,
	// really stopping its sampling while it is off. For the others the
	// dispatcher applies them and drops what they deliver meanwhile.
	Control bool
}

var (
	driversMu sync.Mutex
	drivers   []Driver // sorted by Order
)

// Register makes a backend available. It panics if d has no name or no
// Start function, or if a backend of that name is registered already.
func Register(d Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if d.Name == Auto || d.Start == nil {
		panic("attach: Register of a backend without a name or a Start function")
	}
	for _, r := range drivers {
		if r.Name == d.Name {
			panic("attach: Register called twice for backend " + string(d.Name))
		}
	}
	drivers = append(drivers, d)
	slices.SortStableFunc(drivers, func(a, b Driver) int { return a.Order - b.Order })
}

// registered returns the registered backends, best first.
func registered() []Driver {
	driversMu.Lock()
	defer driversMu.Unlock()
	return slices.Clone(drivers)
}

// Backends lists the backends this platform has, best first; Auto tries
// them in this order.
func Backends() []Backend {
	var bs []Backend
	for _, d := range registered() {
		bs = append(bs, d.Name)
	}
	return bs
}

// ParseBackend checks a backend name a user gave: "" for Auto, else one of
// Backends.
func ParseBackend(name string) (Backend, error) {
	if name == "" {
		return Auto, nil
	}
	platformBackends := Backends()
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

// Settle waits until no target thread is suspended by gprof and keeps it
// so: call it before exiting the process abruptly (os.Exit) while a
// recording may still run. It never gives back what it holds. (The
// backends that suspend threads, mach and suspend, hold a target thread
// suspended for each sample.)
func Settle() {
	for _, d := range registered() {
		if d.Settle != nil {
			d.Settle()
		}
	}
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

// Unavailable is a backend's report that it cannot run here at all (no
// permission, no kernel support), made before it touched any target, so
// that Auto may go on to the next backend: err is what the backend
// returns when there is none; what it needed and did not get, and why,
// go in the fallback notice, after the backend's notices (which are shown
// only on fallback).
func Unavailable(err error, what, why string, notices ...string) error {
	return &unavailableError{err: err, what: what, why: why, notices: notices}
}

// record is the one place a backend is chosen: it checks the options once,
// then runs the backend asked for or, for Auto, the first of Backends that
// is available.
func record(ctx context.Context, opts Options, h event.Handler) (Result, error) {
	switch {
	case opts.SystemWide:
		if len(opts.Pids)+len(opts.Tids) > 0 {
			return Result{ExitCode: -1}, fmt.Errorf("record: a system-wide recording takes no Pids or Tids")
		}
	case (len(opts.Pids)+len(opts.Tids) == 0) == (len(opts.Command) == 0):
		return Result{ExitCode: -1}, fmt.Errorf("record: exactly one of Pids (or Tids) and Command must be set")
	}
	platform := registered()
	if len(platform) == 0 {
		return Result{ExitCode: -1}, ErrUnsupported
	}
	if opts.SystemWide {
		// Only the backends that can; Auto does not fall back to one
		// that would record less than the whole machine.
		var can []Driver
		for _, d := range platform {
			if d.SystemWide {
				can = append(can, d)
			}
		}
		switch {
		case len(can) == 0:
			return Result{ExitCode: -1}, fmt.Errorf("system-wide recording (-a) is not supported on this platform yet: %w", ErrUnsupported)
		case opts.Backend != Auto && !slices.ContainsFunc(can, func(d Driver) bool { return d.Name == opts.Backend }):
			return Result{ExitCode: -1}, fmt.Errorf("the %s backend cannot record system-wide (-a): it samples only processes it attaches to; use --backend %s", opts.Backend, can[0].Name)
		}
		platform = can
	}
	if ev := firstCounting(opts.Events); ev != "" {
		// Only the backends that can; Auto does not fall back to one
		// that would sample CPU time instead.
		var can []Driver
		for _, d := range platform {
			if d.Events {
				can = append(can, d)
			}
		}
		switch {
		case len(can) == 0:
			return Result{ExitCode: -1}, fmt.Errorf("event %s: only cpu-clock and task-clock can be sampled on this platform: %w", ev, ErrUnsupported)
		case opts.Backend != Auto && !slices.ContainsFunc(can, func(d Driver) bool { return d.Name == opts.Backend }):
			return Result{ExitCode: -1}, fmt.Errorf("event %s: the %s backend samples CPU time only; use --backend %s", ev, opts.Backend, can[0].Name)
		}
		platform = can
	}
	if err := resolveTargets(&opts); err != nil {
		return Result{ExitCode: -1}, err
	}
	if _, err := ParseBackend(string(opts.Backend)); err != nil {
		return Result{ExitCode: -1}, err
	}
	tries := platform
	if opts.Backend != Auto {
		i := slices.IndexFunc(platform, func(d Driver) bool { return d.Name == opts.Backend })
		tries = platform[i : i+1]
	}
	notify := opts.Notice
	if notify == nil {
		notify = func(string) {}
	}
	if c := opts.Control; c != nil {
		h = controlled(c, h)
		defer c.Ended()
	}
	// gprof's collections would take every CPU at once beside the
	// targets, and hold its samplers up (package gcfloor).
	defer gcfloor.Hold()()
	// gprof's threads must not preempt the targets (package yield).
	defer yield.Batch()()
	for i, d := range tries {
		res, err := start(ctx, d, opts, h)
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
		notify(fmt.Sprintf("%s are not available (%s); using the %s backend", ue.what, ue.why, tries[i+1].Name))
	}
	panic("unreachable")
}

// start runs backend d; a backend that cannot apply a Control itself has
// its changes applied at once while it runs.
func start(ctx context.Context, d Driver, opts Options, h event.Handler) (Result, error) {
	if opts.Control != nil && !d.Control {
		stop := make(chan struct{})
		defer close(stop)
		go applyAtOnce(opts.Control, stop)
	}
	return d.Start(ctx, opts, h)
}

// firstCounting returns the name of the first event of evs that is not a
// clock, "" when there is none.
func firstCounting(evs []EventSpec) string {
	for _, e := range evs {
		if e.Counting() {
			return e.Name
		}
	}
	return ""
}
