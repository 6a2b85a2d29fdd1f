package attach

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/gprof-dev/gprof/event"
)

// withDrivers registers ds, and only them, for the rest of the test (this
// package's tests link in no real backend).
func withDrivers(t *testing.T, ds ...Driver) {
	t.Helper()
	driversMu.Lock()
	saved := drivers
	drivers = nil
	driversMu.Unlock()
	t.Cleanup(func() {
		driversMu.Lock()
		drivers = saved
		driversMu.Unlock()
	})
	for _, d := range ds {
		Register(d)
	}
}

// fakeDriver is a backend that records nothing, returning err.
func fakeDriver(name Backend, order int, err error) Driver {
	return Driver{Name: name, Order: order, Start: func(context.Context, Options, event.Handler) (Result, error) {
		return Result{ExitCode: -1, Backend: string(name)}, err
	}}
}

func TestParseBackend(t *testing.T) {
	withDrivers(t, fakeDriver("second", 20, nil), fakeDriver("first", 10, nil))
	if got := Backends(); !slices.Equal(got, []Backend{"first", "second"}) {
		t.Errorf("Backends() = %q, want them in registration order", got)
	}
	if b, err := ParseBackend(""); err != nil || b != Auto {
		t.Errorf(`ParseBackend("") = %q, %v; want Auto`, b, err)
	}
	for _, b := range Backends() {
		if got, err := ParseBackend(string(b)); err != nil || got != b {
			t.Errorf("ParseBackend(%q) = %q, %v", b, got, err)
		}
	}
	if _, err := ParseBackend("dtrace"); err == nil || err.Error() != `unknown backend "dtrace" (want first or second)` {
		t.Errorf(`ParseBackend("dtrace") = %v; want an error naming it and the backends, best first`, err)
	}
}

func TestParseBackendNone(t *testing.T) {
	withDrivers(t)
	if _, err := ParseBackend("dtrace"); err == nil || err.Error() != `unknown backend "dtrace": this platform has none yet` {
		t.Errorf(`ParseBackend("dtrace") = %v`, err)
	}
	_, err := Record(context.Background(), Options{Command: []string{"true"}}, func(event.Event) {})
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("Record with no backend: %v, want ErrUnsupported", err)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	withDrivers(t, fakeDriver("one", 10, nil))
	defer func() {
		if recover() == nil {
			t.Error("a second Register of one name did not panic")
		}
	}()
	Register(fakeDriver("one", 20, nil))
}

// The dispatcher checks the backend before any backend runs, whatever the
// caller passed.
func TestRecordRejectsUnknownBackend(t *testing.T) {
	ran := false
	d := Driver{Name: "real", Start: func(context.Context, Options, event.Handler) (Result, error) {
		ran = true
		return Result{}, nil
	}}
	withDrivers(t, d)
	_, err := Record(context.Background(), Options{Command: []string{"true"}, Backend: "dtrace"}, func(event.Event) {})
	if err == nil || ran {
		t.Errorf("Record with backend dtrace: err %v, ran %v; want an error and nothing run", err, ran)
	}
}

// Auto goes on to the next backend when one is unavailable, with the
// notices that say why; a backend asked for by name reports its error.
func TestAutoFallsBack(t *testing.T) {
	denied := errors.New("denied for good")
	withDrivers(t,
		fakeDriver("first", 10, Unavailable(denied, "first events", "not allowed", "the first backend's notice")),
		fakeDriver("second", 20, nil))
	var notices []string
	opts := Options{Command: []string{"true"}, Notice: func(s string) { notices = append(notices, s) }}
	res, err := Record(context.Background(), opts, func(event.Event) {})
	want := []string{"the first backend's notice", "first events are not available (not allowed); using the second backend"}
	if err != nil || res.Backend != "second" || !slices.Equal(notices, want) {
		t.Errorf("Auto: backend %q, err %v, notices %q; want second, nil, %q", res.Backend, err, notices, want)
	}

	notices = nil
	opts.Backend = "first"
	_, err = Record(context.Background(), opts, func(event.Event) {})
	if err != denied || len(notices) != 0 {
		t.Errorf("first alone: err %v, notices %q; want its own error and no notice", err, notices)
	}
}

func TestSettle(t *testing.T) {
	settled := 0
	d := fakeDriver("suspends", 10, nil)
	d.Settle = func() { settled++ }
	withDrivers(t, fakeDriver("plain", 5, nil), d)
	Settle()
	if settled != 1 {
		t.Errorf("Settle called the backend's Settle %d times, want 1", settled)
	}
}
