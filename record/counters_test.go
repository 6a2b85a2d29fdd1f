package record

import (
	"slices"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// fakeProbe replays energy readings.
type fakeProbe struct {
	why string
}

func (f *fakeProbe) read(int) (int64, int64, bool) { return 0, 0, false }
func (f *fakeProbe) selfCPU() int64                { return 0 }
func (f *fakeProbe) threadCPU() int64              { return 0 }
func (f *fakeProbe) now() int64                    { return 0 }
func (f *fakeProbe) energy() []energyReading       { return nil }
func (f *fakeProbe) powerState() string            { return f.why }
func (f *fakeProbe) threadsCPU(int, map[int]int64) {}
func (f *fakeProbe) close()                        {}

// Energy becomes a "power" counter of the first process in pWh per
// sample; a PMU that does not count, or none, is said in the meta.
func TestAttachPower(t *testing.T) {
	mk := func() *profile.Profile {
		return &profile.Profile{Processes: []*profile.Process{{Pid: 1, End: -1}}}
	}
	c := newCounterSampler(1e6, &fakeProbe{})
	c.powerTime = []int64{100, 200, 300}
	c.power = map[string][]float64{"pkg": {10, 10.0036, 10.0072}}
	p := mk()
	c.attach(p, 0)
	cs := p.Processes[0].Counters
	if len(cs) != 1 || cs[0].Category != "power" || cs[0].Name != "Power: pkg" || len(cs[0].Count) != 2 ||
		cs[0].Count[0] < 999_000 || cs[0].Count[0] > 1_001_000 || cs[0].Time[1] != 300 {
		t.Errorf("power counters %+v (want 1e6 pWh per 3.6 mJ)", cs)
	}
	if p.Meta.Extra["power"] != "pkg" {
		t.Errorf("meta power %q", p.Meta.Extra["power"])
	}

	c.power = map[string][]float64{"psys": {0, 0, 0}}
	p = mk()
	c.attach(p, 0)
	if len(p.Processes[0].Counters) != 0 || !strings.Contains(p.Meta.Extra["power"], "did not count") {
		t.Errorf("zero counters kept: %+v, meta %q", p.Processes[0].Counters, p.Meta.Extra["power"])
	}

	c = newCounterSampler(1e6, &fakeProbe{why: "no power PMU"})
	p = mk()
	c.attach(p, 0)
	if p.Meta.Extra["power"] != "no power PMU" {
		t.Errorf("meta power %q", p.Meta.Extra["power"])
	}
}

// CPU deltas between a thread's first and latest CPU time readings are
// scaled to add up to them; samples outside keep theirs.
func TestCalibrateCPU(t *testing.T) {
	th := &profile.Thread{Tid: 7, End: -1}
	for i, d := range []int64{1e6, 1e6, 1e6, 0, 1e6, 1e6} {
		th.Samples.Add(profile.NoStack, int64(i+1)*1e6, d)
	}
	p := &profile.Profile{Processes: []*profile.Process{{Pid: 7, End: -1, Threads: []*profile.Thread{th}}}}
	c := newCounterSampler(1e6, &fakeProbe{})
	// Readings at 1.5 ms and 5.5 ms: samples at 2..5 ms (3 ms of deltas)
	// took 2.7 ms by the scheduler's count.
	c.threads = map[int]*threadSeries{7: {firstT: 1.5e6, firstCPU: 1e6, lastT: 5.5e6, lastCPU: 3.7e6}}
	c.calibrate(p, func(t int64) int64 { return t })
	want := []int64{1e6, 0.9e6, 0.9e6, 0, 0.9e6, 1e6}
	for i, w := range want {
		if got := th.Samples.CPUDelta[i]; got != w {
			t.Errorf("sample %d: CPU delta %d, want %d", i, got, w)
		}
	}
}

// TestTrimCounters: readings after the profile's end (the counters ran on
// while a launched command had its grace to end) are dropped, with a
// counter left without any; those up to the end stay.
func TestTrimCounters(t *testing.T) {
	p := &profile.Profile{Meta: profile.Meta{Duration: 100}}
	p.Processes = []*profile.Process{{Counters: []profile.Counter{
		{Name: "Memory", Time: []int64{10, 100, 150}, Count: []int64{1, 2, 3}},
		{Name: "late", Time: []int64{120}, Count: []int64{1}},
	}}}
	p.Overhead = &profile.Overhead{Time: []int64{50, 110}, Counters: []int64{1, 2}, Threads: []int64{3, 4}}
	trimCounters(p)
	cs := p.Processes[0].Counters
	if len(cs) != 1 || !slices.Equal(cs[0].Time, []int64{10, 100}) || !slices.Equal(cs[0].Count, []int64{1, 2}) {
		t.Errorf("counters %+v", cs)
	}
	if o := p.Overhead; !slices.Equal(o.Time, []int64{50}) || len(o.Counters) != 1 || len(o.Threads) != 1 {
		t.Errorf("overhead %+v", o)
	}
}
