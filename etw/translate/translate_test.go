package translate

import (
	"archive/zip"
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/attach"
	etwevent "github.com/gprof-dev/gprof/etw"
	"github.com/gprof-dev/gprof/format/etl"
	"github.com/gprof-dev/gprof/profile"
)

// perfViewTrace is etw's real PerfView trace (kernel + CLR, 8 CPUs,
// cached stacks) of Test.x86.exe, pid 3644.
func perfViewTrace(t *testing.T) []byte {
	t.Helper()
	zr, err := zip.OpenReader("../../etw/testdata/perfview-net.4.5.2.x86.etl.zip")
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, ".etl") {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			b, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatal("no .etl in the zip")
	return nil
}

type etwOut struct {
	samples []attach.Sample
	maps    []attach.Map
	comms   []attach.Comm
	forks   []attach.Fork
	exits   []attach.Exit
	lost    uint64
}

func (o *etwOut) handle(ev attach.Event) {
	switch e := ev.(type) {
	case *attach.Sample:
		s := *e
		s.Stack = slices.Clone(e.Stack)
		o.samples = append(o.samples, s)
	case *attach.Map:
		o.maps = append(o.maps, *e)
	case *attach.Comm:
		o.comms = append(o.comms, *e)
	case *attach.Fork:
		o.forks = append(o.forks, *e)
	case *attach.Exit:
		o.exits = append(o.exits, *e)
	case *attach.Lost:
		o.lost += e.Count
	}
}

func replay(t *testing.T, data []byte, tr *Translator) {
	t.Helper()
	if err := etwevent.WalkETL(bytes.NewReader(data), func(e *etwevent.Event, cpu, _ int) { tr.Event(e, cpu) }); err != nil {
		t.Fatal(err)
	}
	tr.Flush()
}

// TestETWTranslatorMatchesETLReader runs a real trace's events through the
// live backend's translator, for one target process, and checks it gives
// the samples and stacks the ETL reader gives for that process: the same
// count per thread and, sample by sample, the same addresses (cached stack
// keys, kernel and user parts joined), with 1 ms of CPU each.
func TestETWTranslatorMatchesETLReader(t *testing.T) {
	data := perfViewTrace(t)
	prof, err := etl.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var want *profile.Process
	for _, p := range prof.Processes {
		if p.Pid == 3644 {
			want = p
		}
	}
	if want == nil {
		t.Fatal("the ETL reader has no pid 3644")
	}

	var out etwOut
	tr := New(out.handle, Options{Targets: []int{3644}, ToNS: func(raw int64) int64 { return raw }, Interval: 1e6, Kernel: true})
	replay(t, data, tr)

	byTid := map[int][]attach.Sample{}
	for _, s := range out.samples {
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
		byTid[tid] = append(byTid[tid], s)
	}
	for _, th := range want.Threads {
		if th.Main && th.Tid != int(tr.mainTid[3644]) {
			t.Errorf("main thread %d, the ETL reader's is %d", tr.mainTid[3644], th.Tid)
		}
	}
	total, frames := 0, 0
	for _, th := range want.Threads {
		got := byTid[th.Tid]
		slices.SortStableFunc(got, func(a, b attach.Sample) int { return int(a.Time - b.Time) })
		if len(got) != th.Samples.Len() {
			t.Errorf("thread %d: %d samples, the ETL reader has %d", th.Tid, len(got), th.Samples.Len())
			continue
		}
		total += len(got)
		for i, si := range th.Samples.Stack {
			var wantFr []profile.Frame
			for s := si; s != profile.NoStack; s = th.Stacks.Prefix[s] {
				wantFr = append(wantFr, th.Frames.Frames[th.Stacks.Frame[s]])
			}
			g := got[i]
			if len(g.Stack) != len(wantFr) {
				t.Fatalf("thread %d sample %d: %d frames, want %d", th.Tid, i, len(g.Stack), len(wantFr))
			}
			for j, f := range wantFr {
				if f.Label != "" { // a JIT method the reader named
					continue
				}
				if g.Stack[j] != f.Address {
					t.Fatalf("thread %d sample %d frame %d: %#x, want %#x", th.Tid, i, j, g.Stack[j], f.Address)
				}
				frames++
			}
			nk := 0
			for _, f := range wantFr {
				if f.Category == profile.CategoryKernel {
					nk++
				}
			}
			if g.KernelFrames != nk {
				t.Fatalf("thread %d sample %d: %d kernel frames, want %d", th.Tid, i, g.KernelFrames, nk)
			}
		}
	}
	if total < 4000 {
		t.Errorf("only %d samples compared", total)
	}
	t.Logf("%d samples, %d frames equal to the ETL reader's", total, frames)
}
