package record

import (
	"testing"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/profile"
)

// Off-CPU stretches become samples at the interval with the stack taken at
// the switch, a zero CPU delta and a leaf that says blocked or preempted;
// short stretches add up across switches.
func TestBuilderOffCPU(t *testing.T) {
	b := newTestBuilder()
	b.profile.Meta.Interval = 1e6
	b.handle(mapEv(1000*ms, 10, 0x1000, 0x9000, "/bin/app"))
	b.handle(sample(1001*ms, 10, 10, 0x1100, 0x1200))
	// Blocked for 3.5 ms in 0x1300 called from 0x1200.
	b.handle(&event.Sample{Time: 1002 * ms, Pid: 10, Tid: 10, Switch: true, InKernel: true, Stack: []uint64{0x1300, 0x1200}})
	b.handle(&event.Switch{Time: 1002 * ms, Pid: 10, Tid: 10, Out: true})
	b.handle(&event.Switch{Time: 1005*ms + ms/2, Pid: 10, Tid: 10})
	// Preempted twice for 0.3 ms: together short of an interval, until
	// the second brings the credit of 0.5 ms to 1.1 ms.
	b.handle(&event.Sample{Time: 1006 * ms, Pid: 10, Tid: 10, Switch: true, Stack: []uint64{0x1100, 0x1200}})
	b.handle(&event.Switch{Time: 1006 * ms, Pid: 10, Tid: 10, Out: true, Preempt: true})
	b.handle(&event.Switch{Time: 1006*ms + 3*ms/10, Pid: 10, Tid: 10})
	// No stack taken at this switch: the latest one stands in.
	b.handle(&event.Switch{Time: 1007 * ms, Pid: 10, Tid: 10, Out: true, Preempt: true})
	b.handle(&event.Switch{Time: 1007*ms + 3*ms/10, Pid: 10, Tid: 10})
	// Off when recording stops: sampled up to the end, the credit of
	// 0.1 ms left from before included.
	b.handle(&event.Sample{Time: 1008 * ms, Pid: 10, Tid: 10, Switch: true, Stack: []uint64{0x1300, 0x1200}})
	b.handle(&event.Switch{Time: 1008 * ms, Pid: 10, Tid: 10, Out: true})
	procs := b.finish(1010 * ms)
	if b.profile.Meta.Categories == nil {
		t.Error("off-CPU categories not declared")
	}
	th := procs[0].p.Threads[0]
	type smp struct {
		time, cpu int64
		leaf      string
		frames    int
	}
	var got []smp
	for i, s := range th.Samples.Stack {
		leaf := th.Frames.Frames[th.Stacks.Frame[s]]
		n := 0
		for x := s; x != profile.NoStack; x = th.Stacks.Prefix[x] {
			n++
		}
		name := leaf.Label
		if name == "" {
			name = "native"
		}
		got = append(got, smp{th.Samples.Time[i], th.Samples.CPUDelta[i], name, n})
	}
	want := []smp{
		{1 * ms, ms, "native", 2},
		{3 * ms, 0, BlockedLabel, 3}, {4 * ms, 0, BlockedLabel, 3}, {5 * ms, 0, BlockedLabel, 3},
		{7*ms + 2*ms/10, 0, PreemptedLabel, 3},
		{8*ms + 9*ms/10, 0, BlockedLabel, 3}, {9*ms + 9*ms/10, 0, BlockedLabel, 3},
	}
	if len(got) != len(want) {
		t.Fatalf("samples %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sample %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if c := th.Frames.Frames[th.Stacks.Frame[th.Samples.Stack[1]]].Category; c != profile.CategoryIdle {
		t.Errorf("blocked leaf category %d, want Idle", c)
	}
}
