package gecko

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// TestExecImageCounters: the front-end keeps only the counters of a Gecko
// process object with a GeckoMain thread, which for a process that exec'd
// is the last image's; an earlier image's memory counter was dropped, so
// Gecko output had fewer tracks than the same profile converted to
// processed (issue 18: 10 against 12). Write puts it with the image
// holding the track, and Read gives it back to its own image.
func TestExecImageCounters(t *testing.T) {
	counter := func(name string, at int64) profile.Counter {
		return profile.Counter{Name: name, Category: "Memory", Time: []int64{at, at + 1e6}, Count: []int64{100, 5}}
	}
	sh := &profile.Process{Pid: 7, Name: "sh", End: 5e6, Threads: []*profile.Thread{{Tid: 7, Main: true, End: 5e6}},
		Counters: []profile.Counter{counter("sh memory", 1e6)}}
	py := &profile.Process{Pid: 7, Name: "python", Exec: true, Start: 5e6, End: -1, Threads: []*profile.Thread{{Tid: 7, Main: true, Start: 5e6, End: -1}},
		Counters: []profile.Counter{counter("python memory", 6e6)}}
	for _, th := range []*profile.Thread{sh.Threads[0], py.Threads[0]} {
		th.Samples.Add(th.InternStack([]profile.Frame{{Label: "x"}}), th.Start+1e5, -1)
	}
	p := &profile.Profile{Meta: profile.Meta{Interval: 1e6, Duration: 10e6}, Processes: []*profile.Process{sh, py}}
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	// What the front-end sees: counters only where a GeckoMain thread is.
	var raw struct {
		Threads   []struct{ Name string } `json:"threads"`
		Counters  []struct{ Name string } `json:"counters"`
		Processes []struct {
			Threads  []struct{ Name string } `json:"threads"`
			Counters []struct{ Name string } `json:"counters"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	shown := 0
	count := func(threads []struct{ Name string }, counters []struct{ Name string }) {
		for _, th := range threads {
			if th.Name == "GeckoMain" {
				shown += len(counters)
			}
		}
	}
	count(raw.Threads, raw.Counters)
	for _, sub := range raw.Processes {
		count(sub.Threads, sub.Counters)
	}
	if shown != 2 {
		t.Errorf("the front-end would show %d counters, want 2", shown)
	}

	back, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Processes) != 2 {
		t.Fatalf("%d processes", len(back.Processes))
	}
	for i, want := range []string{"sh memory", "python memory"} {
		cs := back.Processes[i].Counters
		if len(cs) != 1 || cs[0].Name != want || cs[0].Time[0] != p.Processes[i].Counters[0].Time[0] {
			t.Errorf("process %d counters %+v, want %s at %d", i, cs, want, p.Processes[i].Counters[0].Time[0])
		}
	}
}
