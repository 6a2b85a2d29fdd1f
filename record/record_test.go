package record

import (
	"context"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/event"
)

// fakeBackend replaces attach.Record for the duration of a test with one
// that sends events and returns res.
func fakeBackend(t *testing.T, events func(t0 int64) []event.Event, res attach.Result) {
	t.Helper()
	old := backendRecord
	t.Cleanup(func() { backendRecord = old })
	backendRecord = func(ctx context.Context, o attach.Options, h event.Handler) (attach.Result, error) {
		for _, e := range events(event.Now()) {
			h(e)
		}
		return res, nil
	}
}

// A backend reports each lost record once as a Lost event and once in its
// Result's total: the profile must count it once.
func TestRunCountsLostOnce(t *testing.T) {
	fakeBackend(t, func(t0 int64) []event.Event {
		return []event.Event{
			&event.Comm{Time: t0, Pid: 7, Tid: 7, Name: "app"},
			sample(t0+ms, 7, 7, 0x1000),
			&event.Lost{Time: t0 + 2*ms, Count: 1500},
			sample(t0+3*ms, 7, 7, 0x1000),
			&event.Lost{Time: t0 + 4*ms, Count: 75},
		}
	}, attach.Result{ExitCode: -1, Lost: 1575, Backend: "perf"})
	res, err := Run(context.Background(), Options{Attach: attach.Options{Pids: []int{7}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Lost != 1575 || res.Profile.Meta.LostEvents != 1575 {
		t.Errorf("lost %d, in the profile %d; want 1575 (what the backend reported)", res.Lost, res.Profile.Meta.LostEvents)
	}
}

// A backend that only counts its losses (no Lost events) is still heard.
func TestRunCountsBackendOnlyLost(t *testing.T) {
	fakeBackend(t, func(t0 int64) []event.Event {
		return []event.Event{sample(t0+ms, 7, 7, 0x1000)}
	}, attach.Result{ExitCode: -1, Lost: 3})
	res, err := Run(context.Background(), Options{Attach: attach.Options{Pids: []int{7}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Lost != 3 {
		t.Errorf("lost %d, want 3", res.Lost)
	}
}

// With --keep, the result's sample count is what the profile holds, and
// the discarded ones are counted apart: together, every sample taken.
func TestRunSamplesExcludeDiscarded(t *testing.T) {
	const taken = 20000
	fakeBackend(t, func(t0 int64) []event.Event {
		evs := []event.Event{&event.Comm{Time: t0, Pid: 7, Tid: 7, Name: "app"}}
		for i := 1; i <= taken; i++ {
			evs = append(evs, sample(t0+int64(i)*ms, 7, 7, 0x1000))
		}
		return evs
	}, attach.Result{ExitCode: -1})
	res, err := Run(context.Background(), Options{Attach: attach.Options{Pids: []int{7}}, Keep: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	held := uint64(0)
	for _, pr := range res.Profile.Processes {
		for _, th := range pr.Threads {
			held += uint64(th.Samples.Len())
		}
	}
	if res.Discarded == 0 {
		t.Fatal("nothing discarded; the test does not exercise --keep")
	}
	if res.Samples != held {
		t.Errorf("result says %d samples, the profile holds %d", res.Samples, held)
	}
	if res.Samples+res.Discarded != taken {
		t.Errorf("%d held + %d discarded != %d taken", res.Samples, res.Discarded, taken)
	}
}
