package translate

import (
	"bytes"
	"cmp"
	"slices"
	"testing"

	"github.com/gprof-dev/gprof/etwevent/etwtest"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/event/eventtest"

	"github.com/gprof-dev/gprof/etwevent"
)

// replay walks a trace through tr in file order, as a live session
// delivers buffers.
func replay(t *testing.T, data []byte, tr *Translator) {
	t.Helper()
	if err := etwevent.WalkETL(bytes.NewReader(data), func(e *etwevent.Event, cpu, _ int) { tr.Event(e, cpu) }); err != nil {
		t.Fatal(err)
	}
	tr.Flush()
}

// replaySorted walks a trace through tr in time order, as the ETL file
// replayer does, and returns the samples' instructions by thread and time.
func replaySorted(t *testing.T, data []byte, tr *Translator) map[[2]int64]uint64 {
	t.Helper()
	type ev struct {
		e   etwevent.Event
		cpu int
	}
	var evs []ev
	ips := map[[2]int64]uint64{}
	err := etwevent.WalkETL(bytes.NewReader(data), func(e *etwevent.Event, cpu, _ int) {
		if etwevent.KindOf(e) == etwevent.KindSample {
			s, _ := etwevent.DecodeSample(e.Payload, e.Ptr64)
			ips[[2]int64{int64(s.TID), e.Time}] = s.IP
		}
		c := *e
		c.Payload = slices.Clone(e.Payload)
		evs = append(evs, ev{c, cpu})
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(evs, func(x, y ev) int { return cmp.Compare(x.e.Time, y.e.Time) })
	for i := range evs {
		tr.Event(&evs[i].e, evs[i].cpu)
	}
	tr.Flush()
	return ips
}

func fileOptions() Options {
	return Options{AllProcesses: true, KeepTids: true, ToNS: func(raw int64) int64 { return raw }, Interval: 1e6, Kernel: true}
}

// TestLiveAndFileAgree runs a real trace's events through the translator
// twice: as the live backend does, for one target process, its buffers in
// the order they come; and as the ETL replayer does, for every process,
// in time order. The target's samples and stacks must be the same: the
// same count per thread and, sample by sample, the same addresses (cached
// stack keys, kernel and user parts joined), with 1 ms of CPU each.
func TestLiveAndFileAgree(t *testing.T) {
	data := etwtest.PerfViewTrace(t)
	var file eventtest.Collector
	replaySorted(t, data, New(file.Handle, fileOptions()))
	want := map[int][]event.Sample{}
	for _, s := range file.Samples {
		if s.Pid == 3644 {
			want[s.Tid] = append(want[s.Tid], s)
		}
	}

	var live eventtest.Collector
	tr := New(live.Handle, Options{Targets: []int{3644}, ToNS: func(raw int64) int64 { return raw }, Interval: 1e6, Kernel: true})
	replay(t, data, tr)
	got := map[int][]event.Sample{}
	for _, s := range live.Samples {
		if s.Pid != 3644 {
			t.Fatalf("sample of pid %d, not the target", s.Pid)
		}
		if s.CPUDelta != 1e6 {
			t.Fatalf("CPUDelta %d, want the 1 ms interval", s.CPUDelta)
		}
		tid := s.Tid
		if tid == 3644 { // the main thread, reported with the pid
			tid = int(tr.mainTid[3644])
		}
		got[tid] = append(got[tid], s)
	}
	if tr.mainTid[3644] != 3708 {
		t.Errorf("main thread %d, want 3708, the first the trace names", tr.mainTid[3644])
	}
	total, frames := 0, 0
	for tid, w := range want {
		g := got[tid]
		slices.SortStableFunc(g, func(a, b event.Sample) int { return cmp.Compare(a.Time, b.Time) })
		if len(g) != len(w) {
			t.Errorf("thread %d: %d samples live, %d from the file", tid, len(g), len(w))
			continue
		}
		total += len(g)
		for i := range w {
			if !slices.Equal(g[i].Stack, w[i].Stack) || g[i].KernelFrames != w[i].KernelFrames || g[i].Time != w[i].Time {
				t.Fatalf("thread %d sample %d: %x (%d kernel), want %x (%d)", tid, i, g[i].Stack, g[i].KernelFrames, w[i].Stack, w[i].KernelFrames)
			}
			frames += len(w[i].Stack)
		}
	}
	if total < 4000 {
		t.Errorf("only %d samples compared", total)
	}
	t.Logf("%d samples, %d frames alike", total, frames)
}

// TestStackLeafIsSampleIP checks the binding of stack events to samples:
// the leaf of a sample's stack, once cached stack keys are resolved, is the
// sampled instruction. Binding a reused key to the wrong definition (the
// last one, say) breaks this for a third of the samples.
func TestStackLeafIsSampleIP(t *testing.T) {
	var out eventtest.Collector
	ips := replaySorted(t, etwtest.PerfViewTrace(t), New(out.Handle, fileOptions()))
	if len(out.Samples) != 88_809 {
		t.Errorf("%d samples, want the trace's 88,809 SampledProfile events", len(out.Samples))
	}
	withStack, leafIP, both := 0, 0, 0
	for _, s := range out.Samples {
		if len(s.Stack) < 2 {
			continue
		}
		withStack++
		if ip, ok := ips[[2]int64{int64(s.Tid), s.Time}]; ok && s.Stack[0] == ip {
			leafIP++
		}
		if s.KernelFrames > 0 && s.KernelFrames < len(s.Stack) {
			both++
		}
	}
	// Nearly every non-idle sample (88,809 less the Idle process's 82,128)
	// has a stack.
	if withStack < 6500 {
		t.Errorf("%d samples have a stack", withStack)
	}
	if leafIP < withStack*999/1000 {
		t.Errorf("the leaf is the sampled IP in %d of %d stacks", leafIP, withStack)
	}
	// The kernel and user halves of a stack come in separate events.
	if both < 300 {
		t.Errorf("%d samples joined a kernel and a user half", both)
	}
	t.Logf("%d samples with a stack, %d with the sampled IP as leaf, %d with both halves", withStack, leafIP, both)
}
