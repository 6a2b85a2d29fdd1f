package gecko

import (
	"bytes"
	"testing"

	"github.com/goccy/go-json"

	"github.com/gprof-dev/gprof/profile"
)

// eventProfile is testProfile with the samples of two more events on a
// thread (one weighted, one with a stack no sample of the thread's own
// has), a tracepoint marker with its cause stack, and a parallelism
// counter.
func eventProfile() *profile.Profile {
	p := testProfile()
	w := p.Processes[0].Threads[1]
	leaf := w.InternStack([]profile.Frame{{Label: "only in an event"}, {Label: "main loop"}})
	pf := w.EventTable("page-faults")
	pf.Add(0, 2_000_000, -1)
	pf.Add(leaf, 2_500_000, -1)
	pf.Weight = []int32{3, 1}
	tp := w.EventTable("syscalls:sys_enter_openat")
	tp.Add(leaf, 2_600_000, -1)
	w.Markers = append(w.Markers, profile.Marker{Name: "syscalls:sys_enter_openat", Start: 2_600_000,
		Phase: profile.PhaseInstant, Data: map[string]any{"type": profile.TracepointMarkerType, "fields": "dfd=4 filename=0x10"}, Cause: leaf + 1})
	p.Processes[0].Counters = []profile.Counter{{Name: "Parallelism", Category: "Parallelism", Description: "threads",
		Time: []int64{0, 1_000_000, 3_000_000}, Count: []int64{0, 1_000_000, 4_000_000}}}
	return p
}

func TestRoundTripEvents(t *testing.T) {
	want := eventProfile()
	data := encode(t, want)
	got, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	compareProfiles(t, got, want)
	if again := encode(t, got); !bytes.Equal(again, data) {
		t.Error("second write differs from the first")
	}
	if c := got.Processes[0].Counters; len(c) != 1 || c[0].Name != "Parallelism" || c[0].Count[2] != 4_000_000 {
		t.Errorf("counters = %+v", c)
	}
}

// TestEventThreads checks what the front-end reads: each event table is a
// thread of its own after the process's threads, with a tid no other
// thread has, and a marker with a cause carries it as the Gecko "stack".
func TestEventThreads(t *testing.T) {
	var doc struct {
		Threads []struct {
			Name    string `json:"name"`
			Tid     any    `json:"tid"`
			Samples struct {
				Schema map[string]int `json:"schema"`
				Data   [][]any        `json:"data"`
			} `json:"samples"`
			Markers struct {
				Data [][]any `json:"data"`
			} `json:"markers"`
			StackTable struct {
				Data [][]any `json:"data"`
			} `json:"stackTable"`
		} `json:"threads"`
	}
	if err := json.Unmarshal(encode(t, eventProfile()), &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	tids := map[any]bool{}
	for _, th := range doc.Threads {
		names = append(names, th.Name)
		if tids[th.Tid] {
			t.Errorf("tid %v twice", th.Tid)
		}
		tids[th.Tid] = true
	}
	if len(doc.Threads) != 4 || names[2] != "worker [page-faults]" || names[3] != "worker [syscalls:sys_enter_openat]" {
		t.Fatalf("threads %q", names)
	}
	if n := len(doc.Threads[2].Samples.Data); n != 2 {
		t.Errorf("page-faults thread has %d samples, want 2", n)
	}
	if _, ok := doc.Threads[2].Samples.Schema["weight"]; !ok {
		t.Error("page-faults samples have no weight column")
	}
	var cause map[string]any
	for _, m := range doc.Threads[1].Markers.Data {
		if d, ok := m[5].(map[string]any); ok && d["type"] == profile.TracepointMarkerType {
			cause, _ = d["stack"].(map[string]any)
		}
	}
	samples, _ := cause["samples"].(map[string]any)
	rows, _ := samples["data"].([]any)
	if len(rows) != 1 {
		t.Fatalf("tracepoint marker's stack = %v", cause)
	}
	s := int(rows[0].([]any)[0].(float64))
	if s < 0 || s >= len(doc.Threads[1].StackTable.Data) {
		t.Errorf("cause stack %d of %d", s, len(doc.Threads[1].StackTable.Data))
	}
}
