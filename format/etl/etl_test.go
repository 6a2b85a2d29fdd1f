package etl

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// perfView reads the PerfView trace from testdata.
func perfView(t testing.TB) []byte {
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
	data := perfView(t)
	if !Sniff(data) {
		t.Fatal("Sniff does not recognize the trace")
	}
	p, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if p.Meta.LogicalCPUs != 8 || p.Meta.Platform != "Windows" || p.Meta.OSCPU != "Windows 6.2.9200" || p.Meta.Interval.Milliseconds() != 1 {
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
	if ntdll64.CodeID != "5010ACD21be000" || ntdll64.DebugName != "ntdll.pdb" || ntdll64.Offset != 0 {
		t.Errorf("64-bit ntdll: %+v", *ntdll64)
	}
	if ntdll32.DebugName != "wntdll.pdb" {
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
}

func TestSniff(t *testing.T) {
	cut, err := os.ReadFile("../../etw/testdata/cut.etl")
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
	cut, err := os.ReadFile("../../etw/testdata/cut.etl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(cut)
	f.Add(cut[:4096])
	if um, err := os.ReadFile("../../etw/testdata/usermode.etl"); err == nil {
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
