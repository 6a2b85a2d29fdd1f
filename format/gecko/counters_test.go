package gecko

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// Counters go in their process's object, with times relative to it;
// gprof's overhead goes in the top-level one, with its statistics.
func TestWriteCountersAndOverhead(t *testing.T) {
	p := testProfile()
	child := p.Processes[1]
	child.Counters = []profile.Counter{{Name: "Memory", Category: "Memory", Description: "RSS",
		Time: []int64{child.Start + 1e6, child.Start + 2e6}, Count: []int64{4096, -1024}}}
	p.Overhead = &profile.Overhead{Time: []int64{1e6, 2e6}, Counters: []int64{500, 700}, Threads: []int64{1500, 300}}
	var out struct {
		Counters         []any `json:"counters"`
		ProfilerOverhead struct {
			Samples struct {
				Data [][]float64 `json:"data"`
			} `json:"samples"`
			Statistics map[string]float64 `json:"statistics"`
		} `json:"profilerOverhead"`
		Processes []struct {
			Counters []struct {
				Name, Category string
				Samples        struct {
					Schema map[string]int `json:"schema"`
					Data   [][]float64    `json:"data"`
				} `json:"samples"`
			} `json:"counters"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(encode(t, p), &out); err != nil {
		t.Fatal(err)
	}
	if out.Counters != nil {
		t.Errorf("top process has counters %v", out.Counters)
	}
	cs := out.Processes[0].Counters
	if len(cs) != 1 || cs[0].Category != "Memory" || cs[0].Samples.Schema["count"] != 1 {
		t.Fatalf("child counters %+v", cs)
	}
	if d := cs[0].Samples.Data; len(d) != 2 || d[0][0] != 1 || d[0][1] != 4096 || d[1][0] != 2 || d[1][1] != -1024 {
		t.Errorf("child counter samples %v", d)
	}
	po := out.ProfilerOverhead
	if d := po.Samples.Data; len(d) != 2 || d[0][0] != 1000 || d[0][3] != 500 || d[0][4] != 1500 {
		t.Errorf("overhead samples %v (want µs times, ns durations)", d)
	}
	if po.Statistics["samplingCount"] != 2 || po.Statistics["meanOverhead"] != 1.5 || po.Statistics["maxCounter"] != 0.7 {
		t.Errorf("overhead statistics %v", po.Statistics)
	}
}

// Counters and overhead read back as written, so convert keeps them.
func TestReadCountersAndOverhead(t *testing.T) {
	p := testProfile()
	child := p.Processes[1]
	child.Counters = []profile.Counter{{Name: "Memory", Category: "Memory", Description: "RSS",
		Time: []int64{child.Start + 1e6, child.Start + 2e6}, Count: []int64{4096, -1024}}}
	p.Processes[0].Counters = []profile.Counter{{Name: "processCPU", Category: "CPU", Description: "CPU",
		Time: []int64{3e6}, Count: []int64{250000}}}
	p.Overhead = &profile.Overhead{Time: []int64{1e6, 2e6}, Counters: []int64{500, 700}, Threads: []int64{1500, 300}}
	got, err := Read(bytes.NewReader(encode(t, p)))
	if err != nil {
		t.Fatal(err)
	}
	for i, pr := range p.Processes {
		if !reflect.DeepEqual(got.Processes[i].Counters, pr.Counters) {
			t.Errorf("process %d counters %+v, want %+v", i, got.Processes[i].Counters, pr.Counters)
		}
	}
	if !reflect.DeepEqual(got.Overhead, p.Overhead) {
		t.Errorf("overhead %+v, want %+v", got.Overhead, p.Overhead)
	}
}
