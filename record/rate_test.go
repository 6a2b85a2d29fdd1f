package record

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/event"
)

// busySamples returns n samples of pid/tid, each carrying cpu of CPU time,
// one ms apart from t0.
func busySamples(t0 int64, pid, tid, n int, cpu time.Duration) []event.Event {
	var evs []event.Event
	for i := 0; i < n; i++ {
		s := sample(t0+int64(i+1)*ms, pid, tid, 0x1000)
		s.CPUDelta = int64(cpu)
		evs = append(evs, s)
	}
	return evs
}

// A backend that takes a sample per interval of a thread's CPU time is
// silent; one that takes fewer is told, once, with the figure and the
// backend's advice, and the result carries the ratios.
func TestRunSampleRatio(t *testing.T) {
	for _, tc := range []struct {
		name       string
		each       time.Duration // CPU time per sample; the interval is 1 ms
		want       float64
		noticeWant bool
	}{
		{"every interval", time.Millisecond, 1, false},
		{"every other interval", 2 * time.Millisecond, 0.5, true},
		{"just above the limit", 1220 * time.Microsecond, 1 / 1.22, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeBackend(t, func(t0 int64) []event.Event {
				evs := []event.Event{&event.Comm{Time: t0, Pid: 7, Tid: 7, Name: "app"}}
				evs = append(evs, busySamples(t0, 7, 7, 200, tc.each)...)
				// A thread with too little CPU time to judge is left out.
				return append(evs, busySamples(t0, 7, 8, 10, 3*time.Millisecond)...)
			}, attach.Result{ExitCode: -1, Backend: "ptrace", RateAdvice: "lower the rate"})
			var notices []string
			res, err := Run(context.Background(), Options{Attach: attach.Options{Pids: []int{7}, Interval: time.Millisecond,
				Notice: func(s string) { notices = append(notices, s) }}})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(res.SampleRatio-tc.want) > 0.001 || res.SampleRatioMin != res.SampleRatio {
				t.Errorf("ratio %.3f (min %.3f), want %.3f", res.SampleRatio, res.SampleRatioMin, tc.want)
			}
			var shortfall []string
			for _, n := range notices {
				if strings.Contains(n, "of the samples") {
					shortfall = append(shortfall, n)
				}
			}
			if tc.noticeWant {
				if len(shortfall) != 1 || !strings.Contains(shortfall[0], "the ptrace backend took 0.50 of the samples 1000 Hz asks for") ||
					!strings.Contains(shortfall[0], "thread 7 (app): 200 for 0.40 s of CPU") || !strings.HasSuffix(shortfall[0], "; lower the rate") {
					t.Errorf("notices %q, want one about the shortfall with its figures", notices)
				}
			} else if len(shortfall) > 0 {
				t.Errorf("unexpected notice %q", shortfall)
			}
		})
	}
}

// A backend that knows it cannot sample as often as asked reports the
// interval it aimed for, and is judged by it.
func TestRunSampleRatioAtBackendInterval(t *testing.T) {
	fakeBackend(t, func(t0 int64) []event.Event {
		return busySamples(t0, 7, 7, 100, 4*time.Millisecond)
	}, attach.Result{ExitCode: -1, Backend: "suspend", Interval: 4 * time.Millisecond})
	res, err := Run(context.Background(), Options{Attach: attach.Options{Pids: []int{7}, Interval: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if res.SampleRatio != 1 {
		t.Errorf("ratio %.3f, want 1 at the backend's 4 ms", res.SampleRatio)
	}
}

// Samples of files from other tools carry no CPU time: no figure.
func TestRunSampleRatioUnknownCPU(t *testing.T) {
	fakeBackend(t, func(t0 int64) []event.Event {
		return busySamples(t0, 7, 7, 100, -1)
	}, attach.Result{ExitCode: -1})
	res, err := Run(context.Background(), Options{Attach: attach.Options{Pids: []int{7}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.SampleRatio != 0 {
		t.Errorf("ratio %.3f, want none", res.SampleRatio)
	}
}
