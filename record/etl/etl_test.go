package etl

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/etwevent/etwtest"
	"github.com/gprof-dev/gprof/objfile"

	"github.com/gprof-dev/gprof/etwevent"
	"github.com/gprof-dev/gprof/profile"
)

func process(p *profile.Profile, pid int) *profile.Process {
	for _, pr := range p.Processes {
		if pr.Pid == pid {
			return pr
		}
	}
	return nil
}

// TestPerfViewTrace checks the figures PerfView's own log and a byte-level
// reading of the trace give: processes, Test.x86.exe's 4,900 samples with
// whole stacks, and image identities from the RSDS events.
func TestPerfViewTrace(t *testing.T) {
	data := etwtest.PerfViewTrace(t)
	if !Sniff(data) {
		t.Fatal("Sniff does not recognize the trace")
	}
	p, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if p.Meta.LogicalCPUs != 8 || p.Meta.Platform != "Windows" || p.Meta.OSCPU != "Windows 6.2.9200" || p.Meta.Interval.Milliseconds() != 1 || p.Meta.Arch != "x86_64" {
		t.Errorf("meta = %+v", p.Meta)
	}
	if p.Meta.LostEvents != 0 {
		t.Errorf("LostEvents = %d, want 0", p.Meta.LostEvents)
	}
	if d := p.Meta.Duration; d < 10e9 || d > 13e9 {
		t.Errorf("Duration = %d ns, want about 11 s", d)
	}
	total := 0
	for _, pr := range p.Processes {
		for _, th := range pr.Threads {
			total += th.Samples.Len()
		}
	}
	// 88,809 SampledProfile events, all of threads the trace names (4
	// of them only after their samples, by their end events).
	if total != 88_809 {
		t.Errorf("%d samples, want the trace's 88,809 SampledProfile events", total)
	}
	if n := len(p.Processes); n < 30 {
		t.Errorf("%d processes", n)
	}

	pr := process(p, 3644)
	if pr == nil || pr.Name != "Test.x86.exe" {
		t.Fatalf("no Test.x86.exe with pid 3644: %+v", pr)
	}
	// Its threads by their own tids, the first the trace names its main
	// one; its exit status from Process End.
	if th := pr.Threads[0]; th.Tid != 3708 || !th.Main || len(pr.Threads) != 4 {
		t.Errorf("threads: first %d (main %v) of %d, want 3708, main, of 4", th.Tid, th.Main, len(pr.Threads))
	}
	if pr.ExitCode != 0 || pr.End <= pr.Start {
		t.Errorf("Test.x86.exe ran %d to %d, exit code %d", pr.Start, pr.End, pr.ExitCode)
	}
	var libByName = map[string][]profile.Lib{}
	for _, l := range pr.Libs {
		libByName[strings.ToLower(l.Name)] = append(libByName[strings.ToLower(l.Name)], l)
	}
	// WOW64: both ntdlls, with the IDs of their own RSDS records.
	var ntdll32, ntdll64 *profile.Lib
	for i, l := range libByName["ntdll.dll"] {
		switch l.BreakpadID {
		case "6048FDB62DCD41C18835594844CE71432":
			ntdll64 = &libByName["ntdll.dll"][i]
		case "EC83D8DF555946E0B630133EBD9792662":
			ntdll32 = &libByName["ntdll.dll"][i]
		}
	}
	if ntdll64 == nil || ntdll32 == nil {
		t.Fatalf("ntdll.dll libs: %+v", libByName["ntdll.dll"])
	}
	if ntdll64.CodeID != "5010ACD21be000" || ntdll64.DebugName != "ntdll.pdb" || ntdll64.Offset != 0 || ntdll64.Path != `C:\Windows\System32\ntdll.dll` {
		t.Errorf("64-bit ntdll: %+v", *ntdll64)
	}
	if ntdll32.DebugName != "wntdll.pdb" || ntdll32.Arch != "" {
		t.Errorf("32-bit ntdll: %+v", *ntdll32)
	}
	if k := libByName["ntoskrnl.exe"]; len(k) != 1 || k[0].DebugName != "ntkrnlmp.pdb" || k[0].Start < 0xFFFF800000000000 {
		t.Errorf("kernel: %+v", k)
	}
	if e := libByName["test.x86.exe"]; len(e) != 1 || e[0].DebugName != "Test.pdb" || len(e[0].BreakpadID) != 33 {
		t.Errorf("Test.x86.exe: %+v", e)
	}

	samples, rooted, inLib, labels := 0, 0, 0, 0
	for _, th := range pr.Threads {
		for _, s := range th.Samples.Stack {
			samples++
			if s < 0 {
				continue
			}
			leaf := th.Frames.Frames[th.Stacks.Frame[s]]
			if leaf.Label != "" || profile.FindLib(pr.Libs, leaf.Address) != nil {
				inLib++
			}
			root := s
			for th.Stacks.Prefix[root] >= 0 {
				if th.Frames.Frames[th.Stacks.Frame[root]].Label != "" {
					labels++
				}
				root = th.Stacks.Prefix[root]
			}
			f := th.Frames.Frames[th.Stacks.Frame[root]]
			// The stacks reach the thread's entry: _RtlUserThreadStart
			// in the 32-bit ntdll.
			if f.Label == "" && f.Address >= ntdll32.Start && f.Address < ntdll32.End {
				rooted++
			}
		}
	}
	if samples != 4900 {
		t.Errorf("Test.x86.exe has %d samples, want 4,900", samples)
	}
	if rooted < samples*99/100 {
		t.Errorf("%d of %d samples have a stack rooted in the 32-bit ntdll", rooted, samples)
	}
	if inLib < samples*99/100 {
		t.Errorf("%d of %d samples have a leaf in a lib or JIT method", inLib, samples)
	}
	if labels == 0 {
		t.Error("no frame named from the CLR's MethodLoad events")
	}
	// PerfView's first thread (pid+4) is its main thread, though another
	// thread's samples come before the rundown names any.
	if pv := process(p, 3988); pv == nil || pv.Threads[0].Tid != 3992 || !pv.Threads[0].Main {
		t.Errorf("PerfView.exe's threads: %+v", pv)
	}
}

func TestSniff(t *testing.T) {
	cut, err := os.ReadFile("../../etwevent/testdata/cut.etl")
	if err != nil {
		t.Fatal(err)
	}
	if !Sniff(cut) {
		t.Error("cut.etl not recognized")
	}
	for _, b := range [][]byte{nil, []byte("{}"), make([]byte, 4096), cut[:0x60]} {
		if Sniff(b) {
			t.Errorf("Sniff(%d bytes) = true", len(b))
		}
	}
	if _, err := Read(bytes.NewReader(cut[:0x60])); err == nil {
		t.Error("Read of a header cut short succeeded")
	}
	p, err := Read(bytes.NewReader(cut))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Processes) == 0 {
		t.Error("cut.etl: no processes")
	}
}

func FuzzRead(f *testing.F) {
	// small.etl first: uncompressed events of every kind (see
	// TestSmallETL), which mutations reach; cut.etl's buffers are XPRESS
	// streams that most mutations only break.
	small, err := os.ReadFile("../../etwevent/testdata/small.etl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(small)
	cut, err := os.ReadFile("../../etwevent/testdata/cut.etl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(cut)
	f.Add(cut[:4096])
	if um, err := os.ReadFile("../../etwevent/testdata/usermode.etl"); err == nil {
		f.Add(um)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, pr := range p.Processes {
			for _, th := range pr.Threads {
				for _, s := range th.Samples.Stack {
					if s >= int32(th.Stacks.Len()) {
						t.Fatalf("stack index %d out of %d", s, th.Stacks.Len())
					}
				}
			}
		}
	})
}

// A trace of user-mode providers only is an ETL file, but not a profile.
func TestUserModeOnlyTrace(t *testing.T) {
	data, err := os.ReadFile("../../etwevent/testdata/usermode.etl")
	if err != nil {
		t.Fatal(err)
	}
	if !Sniff(data) {
		t.Fatal("usermode.etl is not recognized as an ETL file")
	}
	_, err = Read(bytes.NewReader(data))
	if err == nil || !strings.Contains(err.Error(), "no CPU samples") || !strings.Contains(err.Error(), "PROFILE") {
		t.Fatalf("err = %v, want one saying how to record a profile", err)
	}
}

// An image the trace has no RSDS event for takes its identity from the
// file on disk, if it is the one that was loaded.
func TestIdentityFromDisk(t *testing.T) {
	path := "../../etwevent/testdata/hello-mingw.exe"
	f, err := objfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	id := f.Identity()
	tds, size, _ := f.PEHeader()
	f.Close()
	disk := diskIdentities{}
	im := &etwevent.Image{Base: 0x400000, Size: uint64(size), TimeDateStamp: tds, FileName: path}
	if l := identify(im, path, nil, disk); l.BreakpadID != id.BreakpadID || l.BreakpadID == "" || l.CodeID != id.CodeID || l.Arch != "x86_64" {
		t.Errorf("identity %+v", l)
	}
	// Another build at that path (its size differs) is not the image:
	// it keeps what the trace says.
	im2 := &etwevent.Image{Base: 0x400000, Size: uint64(size) + 0x1000, TimeDateStamp: 0x5f000000, FileName: path}
	if l := identify(im2, path, nil, disk); l.BreakpadID != "" || l.CodeID != fmt.Sprintf("5F000000%x", im2.Size) || l.DebugName != "hello-mingw.exe" {
		t.Errorf("identity %+v taken from another build", l)
	}
}

// firstSample is the time of the trace's first SampledProfile event.
func firstSample(t *testing.T, data []byte) int64 {
	first := int64(-1)
	err := etwevent.WalkETL(bytes.NewReader(data), func(e *etwevent.Event, _, _ int) {
		if etwevent.KindOf(e) == etwevent.KindSample && (first < 0 || e.Time < first) {
			first = e.Time
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return first
}

// A circular trace loses its start rundown: threads and processes that
// existed before it began are named only by the end rundown, after their
// samples. Their samples must still be kept.
func TestCircularTraceKeepsSamples(t *testing.T) {
	data := etwtest.PerfViewTrace(t)
	first := firstSample(t, data)
	count := func(circular bool) map[string]int {
		p, err := read(bytes.NewReader(data), func(e *etwevent.Event) bool {
			k := etwevent.KindOf(e)
			return !circular || e.Time >= first || k != etwevent.KindThreadRundown && k != etwevent.KindProcessRundown
		})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, pr := range p.Processes {
			for _, th := range pr.Threads {
				out[pr.Name] += th.Samples.Len()
			}
			if !pr.Threads[0].Main {
				t.Errorf("%s (circular %v): no main thread", pr.Name, circular)
			}
		}
		return out
	}
	full, circular := count(false), count(true)
	if full["PerfView.exe"] == 0 {
		t.Fatalf("no PerfView.exe samples: %v", full)
	}
	for _, name := range []string{"PerfView.exe", "MsMpEng.exe", "dwm.exe", "Idle", "Test.x86.exe", "csrss.exe", "System"} {
		if circular[name] != full[name] {
			t.Errorf("%s: %d samples without the start rundown, %d with it", name, circular[name], full[name])
		}
	}
}

// A merger that does not put the identity events right before their image
// still gets them joined, by process and base.
func TestLooseIdentityJoin(t *testing.T) {
	data := etwtest.PerfViewTrace(t)
	libsOf := func(loose bool) map[string]string {
		p, err := read(bytes.NewReader(data), func(e *etwevent.Event) bool {
			if loose && (etwevent.KindOf(e) == etwevent.KindImageID || etwevent.KindOf(e) == etwevent.KindDbgIDRSDS) {
				e.Time += 1e7 // a second later: no longer adjacent
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, pr := range p.Processes {
			if pr.Pid != 3644 {
				continue
			}
			for _, l := range pr.Libs {
				out[l.Path] = l.BreakpadID + " " + l.CodeID
			}
		}
		return out
	}
	adjacent, loose := libsOf(false), libsOf(true)
	if len(adjacent) < 100 {
		t.Fatalf("%d libs", len(adjacent))
	}
	for path, id := range adjacent {
		if loose[path] != id {
			t.Errorf("%s: %q joined loosely, %q adjacent", path, loose[path], id)
		}
	}
}
