package report

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/profile"
)

// latencyProfile is perf's example (cpu-and-latency-overheads.txt): foo
// runs alone for 9 s, then bar on 128 threads for 1 s, sampled every
// 10 ms of CPU time, with the parallelism counter a recording with
// --latency has: 1 thread on a CPU, then 128.
func latencyProfile() *profile.Profile {
	const iv = 10 * time.Millisecond
	p := &profile.Profile{Meta: profile.Meta{Interval: iv, Duration: 10e9, Extra: map[string]string{"event": "cpu-clock"}}}
	pr := &profile.Process{Pid: 1, Name: "app", End: -1}
	main := &profile.Thread{Tid: 1, Main: true, End: -1}
	foo := main.InternStack([]profile.Frame{{Label: "foo"}})
	for t := int64(0); t < 9e9; t += int64(iv) {
		main.Samples.Add(foo, t+1, int64(iv))
	}
	pr.Threads = append(pr.Threads, main)
	for k := 0; k < 128; k++ {
		th := &profile.Thread{Tid: 2 + k, End: -1}
		bar := th.InternStack([]profile.Frame{{Label: "bar"}})
		for t := int64(9e9); t < 10e9; t += int64(iv) {
			th.Samples.Add(bar, t+1, int64(iv))
		}
		pr.Threads = append(pr.Threads, th)
	}
	// CPU time of the threads on a CPU (ns) since the previous sample:
	// 1 thread for 9 s, 128 for 1 s.
	pr.Counters = []profile.Counter{{Name: ParallelismCounter, Category: ParallelismCounter,
		Time: []int64{0, 9e9, 10e9}, Count: []int64{0, 9e9, 128e9}}}
	p.Processes = []*profile.Process{pr}
	return p
}

func TestLatencyPerfExample(t *testing.T) {
	l, err := BuildLatency(latencyProfile(), -1, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]float64{"foo": {90, 6.57}, "bar": {10, 93.43}}
	for _, f := range l.TopSelf {
		w, ok := want[f.Name]
		if !ok {
			t.Errorf("function %s", f.Name)
			continue
		}
		if math.Abs(f.LatencyPct-w[0]) > 0.01 || math.Abs(f.CPUPct-w[1]) > 0.01 {
			t.Errorf("%s: latency %.2f%%, cpu %.2f%%; want %.2f%%, %.2f%%", f.Name, f.LatencyPct, f.CPUPct, w[0], w[1])
		}
		delete(want, f.Name)
	}
	if len(want) > 0 {
		t.Errorf("missing %v", want)
	}
	if l.Wall != 10e9 || l.CPU != 137e9 {
		t.Errorf("wall %d, cpu %d; want 10 s of 137 s", l.Wall, l.CPU)
	}
	if len(l.ByParallelism) != 2 || l.ByParallelism[0].Parallelism != 1 || l.ByParallelism[1].Parallelism != 128 ||
		math.Abs(l.ByParallelism[0].LatencyPct-90) > 0.01 {
		t.Errorf("by parallelism %+v", l.ByParallelism)
	}
	var b strings.Builder
	if err := WriteLatencyText(&b, l); err != nil || !strings.Contains(b.String(), "90.00%") {
		t.Errorf("text %q %v", b.String(), err)
	}
}

func TestLatencyNeedsParallelism(t *testing.T) {
	p := latencyProfile()
	p.Processes[0].Counters = nil
	if _, err := BuildLatency(p, 0, false); err != ErrNoParallelism {
		t.Errorf("err %v, want ErrNoParallelism", err)
	}
}

// TestLatencyPerProcess: in a system-wide recording each sample counts
// its own process's threads, not the machine's.
func TestLatencyPerProcess(t *testing.T) {
	p := latencyProfile()
	other := &profile.Process{Pid: 2, Name: "other", End: -1,
		Counters: []profile.Counter{{Name: ParallelismCounter, Time: []int64{0, 10e9}, Count: []int64{0, 30e9}}}}
	p.Processes = append(p.Processes, other)
	l, _ := BuildLatency(p, -1, false)
	if f := l.TopSelf; len(f) == 0 || f[0].Name != "foo" || math.Abs(f[0].LatencyPct-225/(225+12800.0/131)*100) > 0.02 {
		t.Errorf("recording-wide: %+v", f)
	}
	p.Meta.Extra["system_wide"] = "true"
	l, _ = BuildLatency(p, -1, false)
	if f := l.TopSelf; len(f) == 0 || math.Abs(f[0].LatencyPct-90) > 0.01 || !l.PerProcess {
		t.Errorf("per process: %+v", f)
	}
}
