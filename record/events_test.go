package record

import (
	"testing"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/profile"
)

// TestEventSamples: the builder puts each event's samples in its table,
// weighed by their period, a tracepoint hit also a marker with its stack,
// and the first event's samples are the thread's own.
func TestEventSamples(t *testing.T) {
	p := &profile.Profile{Meta: profile.Meta{Extra: map[string]string{}}}
	b := newBuilder(0, p)
	b.events = []EventInfo{{Name: "cpu-clock"}, {Name: "page-faults", Counting: true}, {Name: "sched:sched_switch", Counting: true, Traced: true}}
	b.handle(&event.Sample{Time: 10, Pid: 1, Tid: 1, CPUDelta: 1e6, Stack: []uint64{0x1000}})
	b.handle(&event.Sample{Time: 20, Pid: 1, Tid: 1, Event: 1, Period: 7, Stack: []uint64{0x2000}})
	b.handle(&event.Sample{Time: 30, Pid: 1, Tid: 1, Event: 1, Period: 1, Stack: []uint64{0x2000}})
	b.handle(&event.Sample{Time: 40, Pid: 1, Tid: 1, Event: 2, Period: 1, InKernel: true, Stack: []uint64{0x3000}, Fields: []byte("prev_pid=1")})
	procs := b.finish(50)
	b.finishEvents(nil)
	th := procs[0].p.Threads[0]
	if th.Samples.Len() != 1 || len(th.Events) != 2 {
		t.Fatalf("%d samples, events %+v", th.Samples.Len(), th.Events)
	}
	pf := th.Events[0]
	if pf.Event != "page-faults" || pf.Samples.Len() != 2 || pf.Samples.Weight[0] != 7 || pf.Samples.Weight[1] != 1 || pf.Samples.CPUDelta[0] != -1 {
		t.Errorf("page-faults %+v", pf)
	}
	sw := th.Events[1]
	if len(th.Markers) != 1 || th.Markers[0].Name != "sched:sched_switch" || th.Markers[0].Cause != sw.Samples.Stack[0]+1 ||
		th.Markers[0].Data["fields"] != "prev_pid=1" {
		t.Errorf("markers %+v", th.Markers)
	}
	// A tracepoint's hit is in the kernel: no [kernel] frame stands for
	// it, its user stack is all there is.
	if f := th.Frames.Frames[th.Stacks.Frame[sw.Samples.Stack[0]]]; f.Label != "" || f.Address != 0x3000 {
		t.Errorf("tracepoint leaf %+v", f)
	}
	if p.Meta.Extra["events"] != "cpu-clock,page-faults,sched:sched_switch" {
		t.Errorf("events %q", p.Meta.Extra["events"])
	}
}

// TestIPCCounter: instructions per cycle from the two events' samples, per
// 10 ms.
func TestIPCCounter(t *testing.T) {
	th := &profile.Thread{}
	s := th.InternStack([]profile.Frame{{Label: "f"}})
	cyc := &th.Samples
	ins := th.EventTable("instructions")
	for i := int64(0); i < 10; i++ {
		addWeighted(cyc, s, i*1e6, -1, 1000)     // 1000 cycles a ms in the first 10 ms
		addWeighted(ins, s, i*1e6, -1, 2500)     // IPC 2.5
		addWeighted(cyc, s, 1e7+i*1e6, -1, 4000) // then IPC 0.5
		addWeighted(ins, s, 1e7+i*1e6, -1, 2000)
	}
	c, ok := ipcCounter(&profile.Process{Threads: []*profile.Thread{th}}, "cycles", "instructions", true, false)
	if !ok || len(c.Count) != 2 || c.Count[0] != 2500 || c.Count[1] != 500 || c.Time[0] != 1e7 {
		t.Errorf("IPC counter %+v", c)
	}
}

// TestParallelism: a process's threads on a CPU, from switches and
// samples, with a thread's older switch, seen late, ignored.
func TestParallelism(t *testing.T) {
	pr := &proc{p: &profile.Process{}}
	p := newParallelism(1)
	p.set(pr, 1, true, 0)
	p.set(pr, 2, true, 1000)  // 2 threads from 1000
	p.set(pr, 2, false, 3000) // 1 from 3000
	p.set(pr, 2, true, 2500)  // older than its switch out: ignored
	p.set(pr, 1, false, 4000)
	p.finish(5000)
	p.attach(0)
	c := pr.p.Counters[0]
	// Levels: 1 on (0,1000], 2 on (1000,3000], 1 on (3000,4000], 0 after.
	want := map[int64]int64{1000: 1000, 3000: 4000, 4000: 1000, 5000: 0}
	for i, tm := range c.Time[1:] {
		if want[tm] != c.Count[i+1] {
			t.Errorf("at %d: %d thread-ns, want %d (counter %+v)", tm, c.Count[i+1], want[tm], c)
		}
	}
}
