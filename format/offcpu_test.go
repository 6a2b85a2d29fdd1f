package format

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/profile"
)

// recorded is a Python recording as record writes it: the Python
// categories (which include Idle and Preempted) and its word on what the
// samples measure; offCPU adds samples off the CPU.
func recorded(offCPU bool) *profile.Profile {
	th := &profile.Thread{Tid: 7, Name: "python3", Main: true, End: -1}
	run := th.InternStack([]profile.Frame{{Label: "jsoner", Category: profile.CategoryPython, File: "/j.py", Line: 3}})
	for i := range 20 {
		th.Samples.Add(run, int64(i)*1e6, 1e6)
	}
	if offCPU {
		wait := th.InternStack([]profile.Frame{{Label: "[blocked]", Category: profile.CategoryIdle}, {Label: "jsoner", Category: profile.CategoryPython, File: "/j.py", Line: 3}})
		for i := range 20 {
			th.Samples.Add(wait, int64(20+i)*1e6, 0)
		}
	}
	return &profile.Profile{
		Meta: profile.Meta{Product: "gprof", StartTime: time.Unix(1700000000, 0), Interval: time.Millisecond, Duration: 40e6,
			Categories: profile.PythonCategories, Extra: map[string]string{profile.ExtraOffCPU: map[bool]string{true: "true", false: "false"}[offCPU]}},
		Processes: []*profile.Process{{Pid: 7, Name: "python3", End: -1, Threads: []*profile.Thread{th}}},
	}
}

// What the recorder said about its samples survives every format gprof
// writes and reads back, and a conversion of a conversion (issue 29: the
// report took any profile with an Idle category for an off-CPU one).
func TestOffCPURoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, off := range []bool{false, true} {
		for _, chain := range [][]Kind{{Gecko}, {Processed}, {PProf}, {Gecko, Processed, Gecko}, {PProf, Processed}, {Processed, PProf, Gecko}} {
			p := recorded(off)
			for i, k := range chain {
				path := filepath.Join(dir, string(k)+".gz")
				if err := WriteFile(path, p, k); err != nil {
					t.Fatal(err)
				}
				var err error
				if p, _, err = File(path); err != nil {
					t.Fatalf("%v step %d: %v", chain, i, err)
				}
			}
			if got := p.OffCPU(); got != off {
				t.Errorf("off_cpu %v through %v: read back %v (extra %v)", off, chain, got, p.Meta.Extra)
			}
		}
	}
}
