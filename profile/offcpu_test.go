package profile

import (
	"testing"
	"time"
)

// cpuThread samples main 5 times on the CPU; blocked adds 3 samples off it
// (a [blocked] leaf of the Idle category, as record --off-cpu makes them).
func cpuThread(blocked bool) *Thread {
	th := &Thread{Tid: 1, Main: true, End: -1}
	s := th.InternStack([]Frame{{Label: "work", Category: CategoryPython}, {Label: "main", Category: CategoryPython}})
	for i := range 5 {
		th.Samples.Add(s, int64(i)*1e6, 1e6)
	}
	if blocked {
		b := th.InternStack([]Frame{{Label: "[blocked]", Category: CategoryIdle}, {Label: "main", Category: CategoryPython}})
		for i := range 3 {
			th.Samples.Add(b, int64(5+i)*1e6, 0)
		}
	}
	return th
}

func TestOffCPU(t *testing.T) {
	mk := func(cats []CategoryInfo, extra map[string]string, blocked bool) *Profile {
		return &Profile{Meta: Meta{Interval: time.Millisecond, Categories: cats, Extra: extra},
			Processes: []*Process{{Pid: 1, End: -1, Threads: []*Thread{cpuThread(blocked)}}}}
	}
	for _, tc := range []struct {
		what string
		p    *Profile
		want bool
	}{
		// Issue 29: a Python recording made without --off-cpu has the
		// Idle category (PythonCategories holds it) and no sample off
		// the CPU.
		{"python categories, CPU samples only, no word from the recorder", mk(PythonCategories, nil, false), false},
		{"python categories, recorder says CPU", mk(PythonCategories, map[string]string{ExtraOffCPU: "false"}, false), false},
		{"recorder says off-CPU", mk(PythonCategories, map[string]string{ExtraOffCPU: "true"}, true), true},
		// Profiles of other producers, or of gprof before it said so:
		// the samples decide.
		{"off-CPU samples, no word", mk(OffCPUCategories, nil, true), true},
		{"off-CPU categories, no off-CPU sample", mk(OffCPUCategories, nil, false), false},
		{"default categories", mk(nil, nil, false), false},
		// The recorder's word wins over the samples.
		{"recorder says CPU", mk(OffCPUCategories, map[string]string{ExtraOffCPU: "false"}, true), false},
	} {
		if got := tc.p.OffCPU(); got != tc.want {
			t.Errorf("%s: OffCPU() = %v, want %v", tc.what, got, tc.want)
		}
	}
	// Categories by name, not index: another producer's table may put
	// Idle elsewhere.
	p := mk([]CategoryInfo{{Name: "Other"}, {Name: "Idle"}}, nil, false)
	th := p.Processes[0].Threads[0]
	th.Samples.Add(th.InternStack([]Frame{{Label: "wait", Category: 1}}), 9e6, 0)
	if !p.OffCPU() {
		t.Errorf("a sample in a category named Idle at index 1 is not off the CPU")
	}
}
