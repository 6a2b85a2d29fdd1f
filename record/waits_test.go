package record

import (
	"testing"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/profile"
)

// A long wait gets a marker that names the function it waited in, its
// callers, the system call and the wait channel; a short one gets none.
func TestWaitMarkers(t *testing.T) {
	b := newTestBuilder()
	b.profile.Meta.Interval = 1e6
	b.handle(mapEv(1000*ms, 10, 0x1000, 0x9000, "/bin/app"))
	b.handle(sample(1001*ms, 10, 10, 0x1100))
	kern := uint64(0xffffffff81000000)
	wait := &event.Sample{Time: 1002 * ms, Pid: 10, Tid: 10, Switch: true, InKernel: true,
		Stack: []uint64{kern + 0x10, kern + 0x20, kern + 0x30, 0x1300, 0x1310, 0x1200}, KernelFrames: 3}
	b.handle(wait)
	b.handle(&event.Switch{Time: 1002 * ms, Pid: 10, Tid: 10, Out: true})
	b.handle(&event.Switch{Time: 1022 * ms, Pid: 10, Tid: 10})
	b.handle(wait)
	b.handle(&event.Switch{Time: 1030 * ms, Pid: 10, Tid: 10, Out: true})
	b.handle(&event.Switch{Time: 1035 * ms, Pid: 10, Tid: 10})
	procs := b.finish(1040 * ms)
	pr := procs[0].p
	pr.Libs = []profile.Lib{{Start: 0x1000, End: 0x9000, Name: "app", DebugName: "app", BreakpadID: "A"}}
	p := b.profile
	p.Symbols = &profile.SymbolTable{}
	app := pr.Libs[0].Key()
	p.Symbols.Add(app, 0x300, []profile.SymbolFrame{{Function: "read"}})
	p.Symbols.Add(app, 0x310, []profile.SymbolFrame{{Function: "read"}})
	p.Symbols.Add(app, 0x200, []profile.SymbolFrame{{Function: "main"}, {Function: "wait_for_data"}})
	k := profile.LibKey{DebugName: profile.KernelDebugName, BreakpadID: "K"}
	p.Symbols.Add(k, kern+0x10, []profile.SymbolFrame{{Function: "schedule"}})
	p.Symbols.Add(k, kern+0x1f, []profile.SymbolFrame{{Function: "pipe_read"}})
	p.Symbols.Add(k, kern+0x2f, []profile.SymbolFrame{{Function: "__x64_sys_read"}})
	nameWaits(p, b.waits)

	th := pr.Threads[0]
	if len(th.Markers) != 1 {
		t.Fatalf("markers %+v, want one (the 5 ms wait is short)", th.Markers)
	}
	m := th.Markers[0]
	if m.Name != "Blocked" || m.Start != 2*ms || m.End != 22*ms || m.Phase != profile.PhaseInterval {
		t.Errorf("marker %+v", m)
	}
	want := map[string]any{"type": profile.OffCPUMarkerType, "function": "read", "stack": "wait_for_data ← main", "syscall": "read", "wchan": "pipe_read"}
	for k, v := range want {
		if m.Data[k] != v {
			t.Errorf("marker data %s = %v, want %v", k, m.Data[k], v)
		}
	}
}

// A backend's wait channel (ptrace reads /proc) names the wait when the
// stack has no kernel frames.
func TestWaitMarkerWchanFromBackend(t *testing.T) {
	b := newTestBuilder()
	b.profile.Meta.Interval = 1e6
	b.handle(mapEv(1000*ms, 10, 0x1000, 0x9000, "/bin/app"))
	b.handle(&event.Sample{Time: 1001 * ms, Pid: 10, Tid: 10, Switch: true, Stack: []uint64{0x1300}})
	b.handle(&event.Switch{Time: 1001 * ms, Pid: 10, Tid: 10, Out: true, Wchan: "pipe_read"})
	b.handle(&event.Switch{Time: 1031 * ms, Pid: 10, Tid: 10})
	procs := b.finish(1040 * ms)
	nameWaits(b.profile, b.waits)
	m := procs[0].p.Threads[0].Markers
	if len(m) != 1 || m[0].Data["wchan"] != "pipe_read" {
		t.Errorf("markers %+v", m)
	}
}
