package perfdata_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/format"
	"github.com/gprof-dev/gprof/record/perfdata"
)

// TestFilePerfData: a perf.data file is recognized by its magic and built
// into the model: split's process, its samples with their CPU time, and
// the file's modification time dating the profile.
func TestFilePerfData(t *testing.T) {
	path := filepath.Join("testdata", "fp.data")
	p, k, err := format.File(path)
	if err != nil || k != perfdata.Kind {
		t.Fatalf("kind %q, %v", k, err)
	}
	if len(p.Processes) != 1 || p.Processes[0].Name != "split" {
		t.Fatalf("processes %+v, want split alone", p.Processes)
	}
	var n int
	var cpu int64
	for _, th := range p.Processes[0].Threads {
		n += th.Samples.Len()
		for _, d := range th.Samples.CPUDelta {
			cpu += d
		}
	}
	// perf script counts 41 samples; at 400 Hz each is 2.5 ms of CPU.
	if n != 41 || cpu != 41*2500000 {
		t.Errorf("%d samples, %d ns of CPU; want 41 and %d", n, cpu, 41*2500000)
	}
	st, _ := os.Stat(path)
	end := p.Meta.StartTime.Add(time.Duration(p.Meta.Duration))
	if d := end.Sub(st.ModTime()); d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("profile ends at %v, the file was written at %v", end, st.ModTime())
	}
	if p.Meta.Interval != time.Second/400 || p.Meta.Extra["event"] != "cpu-clock:pppH" {
		t.Errorf("interval %v, event %q", p.Meta.Interval, p.Meta.Extra["event"])
	}
}
