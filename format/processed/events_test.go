package processed

import (
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// TestRoundTripEvents: a thread's samples of other events are threads of
// their own, with their weights, that Read folds back into the thread; a
// marker's cause stack survives as the processed format's cause.
func TestRoundTripEvents(t *testing.T) {
	orig := testProfile()
	pr := orig.Processes[0]
	main := pr.Threads[0]
	u := profile.CategoryUser
	s := main.InternStack([]profile.Frame{{Address: memcpyIP, Category: u}, {Address: computeRet, Category: u}, {Address: mainRet, Category: u}})
	only := main.InternStack([]profile.Frame{{Label: "only an event's"}, {Address: mainRet, Category: u}})
	pf := main.EventTable("page-faults")
	pf.Add(s, 1.5e6, -1)
	pf.Add(only, 2.5e6, -1)
	pf.Weight = []int32{7, 1}
	main.Markers = append(main.Markers, profile.Marker{Name: "sched:sched_switch", Start: 3e6, End: 3e6, Phase: profile.PhaseInstant,
		Data: map[string]any{"type": profile.TracepointMarkerType, "fields": "prev_pid=1"}, Cause: only + 1})
	pr.Counters = []profile.Counter{{Name: "Parallelism", Category: "Parallelism", Time: []int64{0, 2e6}, Count: []int64{0, 3e6}}}

	first := writeTest(t, orig)
	out := decode(t, first)
	threads := out["threads"].([]any)
	if len(threads) != 4 {
		t.Fatalf("%d threads written, want 4 (3 and the page-faults one)", len(threads))
	}
	ev := threads[3].(map[string]any)
	if ev["name"] != "app-main [page-faults]" || ev["isMainThread"] != false {
		t.Errorf("event thread %v %v", ev["name"], ev["isMainThread"])
	}
	check(t, ev, "samples.weight", `[7,1]`)
	var display any
	for _, c := range out["counters"].([]any) {
		if c.(map[string]any)["name"] == "Parallelism" {
			display = c.(map[string]any)["display"]
		}
	}
	if display == nil {
		t.Error("the Parallelism counter is not written, or has no display")
	}

	p := readTest(t, first)
	rm := p.Processes[0].Threads[0]
	if len(p.Processes[0].Threads) != 2 || len(rm.Events) != 1 || rm.Events[0].Event != "page-faults" {
		t.Fatalf("read back %d threads, events %+v", len(p.Processes[0].Threads), rm.Events)
	}
	got := resolve(p, p.Processes[0], &profile.Thread{Frames: rm.Frames, Stacks: rm.Stacks, Samples: rm.Events[0].Samples})
	want := resolve(orig, pr, &profile.Thread{Frames: main.Frames, Stacks: main.Stacks, Samples: main.Events[0].Samples})
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("page-faults stacks:\n got %q\nwant %q", got, want)
	}
	if w := rm.Events[0].Samples.Weight; len(w) != 2 || w[0] != 7 {
		t.Errorf("weights %v", w)
	}
	var cause int32
	for _, m := range rm.Markers {
		if m.Name == "sched:sched_switch" {
			cause = m.Cause
			if _, ok := m.Data["cause"]; ok {
				t.Error("the cause is left in the payload")
			}
		}
	}
	if cause == 0 {
		t.Fatal("the tracepoint marker has no cause stack")
	}
	cg := resolve(p, p.Processes[0], &profile.Thread{Frames: rm.Frames, Stacks: rm.Stacks, Samples: profile.SampleTable{Stack: []int32{cause - 1}}})
	if cg[0] != want[1] {
		t.Errorf("cause stack %q, want %q", cg[0], want[1])
	}
	if second := writeTest(t, p); string(second) != string(first) {
		t.Error("writing what was read gives other bytes")
	}
}
