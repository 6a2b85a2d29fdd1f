package perfdata

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/event"
)

// The seeds in testdata were recorded by perf 6.1 on x86_64 from
// testdata/split.c built with frame pointers at /tmp/pd/split ('split 1
// 0.1'). The expected counts are what 'perf script' prints for them.
const splitBuildID = "fd55fcc36b411dcf395e86f4ea63c0a80661c22d"

var seeds = []struct {
	file       string
	pipe       bool
	samples    uint64
	other      uint64
	dwarf      bool
	noBuildIDs bool // perf stores none in pipe mode, nor with -z
}{
	{file: "fp.data", samples: 41},
	{file: "pipe.data", pipe: true, samples: 41, noBuildIDs: true},
	{file: "compressed.data", samples: 40, noBuildIDs: true},
	{file: "dwarf.data", samples: 19, dwarf: true},
	// Two events, both converted: 109 samples each, as perf script counts.
	{file: "multi.data", samples: 218},
}

func readSeed(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseSeeds(t *testing.T) {
	for _, s := range seeds {
		t.Run(s.file, func(t *testing.T) {
			f, err := Parse(readSeed(t, s.file))
			if err != nil {
				t.Fatal(err)
			}
			if f.Pipe != s.pipe {
				t.Errorf("Pipe = %v, want %v", f.Pipe, s.pipe)
			}
			if f.Samples != s.samples || f.OtherSamples != s.other {
				t.Errorf("samples %d (others %d), want %d (%d) as perf script counts", f.Samples, f.OtherSamples, s.samples, s.other)
			}
			byEvent := map[int]uint64{}
			for _, e := range f.Events {
				if sm, ok := e.(*event.Sample); ok {
					byEvent[sm.Event]++
				}
			}
			if n := len(f.SampledAttrs()); len(byEvent) != n || s.file == "multi.data" && (byEvent[0] != 109 || byEvent[1] != 109) {
				t.Errorf("samples by event %v of %d events", byEvent, n)
			}
			if a := f.SampledAttr(); !strings.HasPrefix(a.Name, "cpu-clock") || !a.IsClock() {
				t.Errorf("sampled event %q (type %d config %d), want cpu-clock", a.Name, a.Type, a.Config)
			}
			if f.Arch != "x86_64" || f.Hostname != "vm" || f.CPUsOnline != 2 || len(f.Cmdline) < 3 || f.Cmdline[1] != "record" {
				t.Errorf("features: arch %q host %q cpus %d cmdline %q", f.Arch, f.Hostname, f.CPUsOnline, f.Cmdline)
			}
			want := splitBuildID
			if s.noBuildIDs {
				want = ""
			}
			if got := hex.EncodeToString(f.BuildIDs["/tmp/pd/split"]); got != want {
				t.Errorf("build-id of /tmp/pd/split = %q, want %q (perf buildid-list)", got, want)
			}
			if f.KernelMapStart == 0 {
				t.Error("no kernel mapping")
			}
			checkEvents(t, f, s.dwarf, want)
		})
	}
}

func checkEvents(t *testing.T, f *File, dwarf bool, buildID string) {
	t.Helper()
	var last int64
	var execSeen, splitMapped, kernel bool
	var pid int
	for _, e := range f.Events {
		if tm := event.EventTime(e); tm < last {
			t.Fatalf("events out of time order: %d after %d", tm, last)
		} else {
			last = tm
		}
		switch e := e.(type) {
		case *event.Comm:
			if e.Exec && e.Name == "split" {
				execSeen, pid = true, e.Pid
			}
		case *event.Map:
			if e.Path == "/tmp/pd/split" {
				splitMapped = hex.EncodeToString(e.BuildID) == buildID && e.Inode != 0
			}
		case *event.Sample:
			if e.Pid != pid || e.Tid == 0 || e.Time == 0 {
				t.Fatalf("sample of pid %d tid %d at %d; split is pid %d", e.Pid, e.Tid, e.Time, pid)
			}
			if e.KernelFrames > 0 {
				kernel = true
			}
			if dwarf {
				if e.Regs == nil || len(e.StackCopy) == 0 || len(e.StackCopy) > 512 {
					t.Fatalf("dwarf sample without registers and a stack copy of at most 512 bytes: %+v", e)
				}
				if e.Regs.SP == 0 || e.Regs.IP == 0 {
					t.Fatalf("registers %+v", e.Regs)
				}
			} else if len(e.Stack) < 2+e.KernelFrames {
				t.Fatalf("fp sample with %d frames (%d kernel): want the user chain too", len(e.Stack), e.KernelFrames)
			}
			if e.CPUDelta <= 0 {
				t.Fatalf("cpu-clock sample without CPU time: %d", e.CPUDelta)
			}
		}
	}
	if !execSeen || !splitMapped {
		t.Errorf("exec of split seen %v; split mapped with its build-id and inode %v", execSeen, splitMapped)
	}
	if !kernel {
		t.Error("no kernel frames; perf script shows some in every seed")
	}
}

// TestParseTruncated cuts a seed everywhere: each prefix is an error or a
// file with fewer samples, never a panic.
func TestParseTruncated(t *testing.T) {
	for _, name := range []string{"fp.data", "pipe.data", "dwarf.data"} {
		data := readSeed(t, name)
		full, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		step := 1
		if testing.Short() {
			step = 61
		}
		for n := 0; n < len(data); n += step {
			f, err := Parse(bytes.Clone(data[:n]))
			if err == nil && f.Samples > full.Samples {
				t.Fatalf("%s cut at %d: %d samples, more than the whole file's %d", name, n, f.Samples, full.Samples)
			}
			if err != nil && (strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "perf.data")) {
				t.Fatalf("%s cut at %d: error %q is not one line about perf.data", name, n, err)
			}
		}
	}
}

func TestParseNotPerfData(t *testing.T) {
	if _, err := Parse([]byte(`{"meta":{}}`)); err == nil || !strings.Contains(err.Error(), "not a perf.data") {
		t.Errorf("JSON parsed as perf.data: %v", err)
	}
	if Sniff([]byte("PERFILE")) || !Sniff([]byte("PERFILE2....")) {
		t.Error("Sniff")
	}
}

// tiny.data is 'perf record -e cpu-clock -c 2000000 --call-graph dwarf,512'
// of a 15-line C program that forks and spins in both processes (perf 6.1,
// Debian 12): 15 KB holding a handful of records of every kind a recording
// has (comm, fork, exit, mmap, mmap2 (the executable ones kept), samples with registers and a stack
// copy, and the header records of a perf 6 file), the first fuzzing seed.
func TestParseTiny(t *testing.T) {
	f, err := Parse(readSeed(t, "tiny.data"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range f.Events {
		switch e := e.(type) {
		case *event.Sample:
			if e.Regs != nil && len(e.StackCopy) > 0 {
				kinds["dwarf sample"]++
			}
		default:
			kinds[fmt.Sprintf("%T", e)]++
		}
	}
	if f.Samples != 9 || kinds["dwarf sample"] != 9 || kinds["*event.Fork"] == 0 || kinds["*event.Exit"] < 2 || kinds["*event.Map"] < 3 || kinds["*event.Comm"] < 1 {
		t.Errorf("%d samples (perf script: 9), events %v", f.Samples, kinds)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(readSeed(f, "tiny.data"))
	f.Add(readSeed(f, "trace.data"))
	for _, s := range seeds {
		f.Add(readSeed(f, s.file))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := Parse(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		for _, e := range pf.Events {
			if s, ok := e.(*event.Sample); ok && s.KernelFrames > len(s.Stack) {
				t.Fatalf("%d kernel frames in a stack of %d", s.KernelFrames, len(s.Stack))
			}
		}
	})
}

// TestParseMutations damages the seeds the ways a broken file is damaged
// (bytes overwritten, inserted, removed; huge sizes): never a panic or a
// hang. FuzzParse explores further with 'go test -fuzz FuzzParse'.
func TestParseMutations(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, s := range seeds {
		base := readSeed(t, s.file)
		for i := 0; i < 400; i++ {
			d := bytes.Clone(base)
			for j := 0; j < 1+r.Intn(8); j++ {
				p := r.Intn(len(d) - 8)
				switch r.Intn(4) {
				case 0:
					d[p] = byte(r.Intn(256))
				case 1:
					d = append(d[:p:p], append([]byte{0xff, 0xff, 0xff, 0x7f}, d[p:]...)...)
				case 2:
					d = append(d[:p:p], d[min(p+r.Intn(64), len(d)):]...)
				case 3:
					copy(d[p:], []byte{0, 0, 0, 0, 0, 0, 0, 0x80})
				}
			}
			done := make(chan error, 1)
			go func() { _, err := Parse(d); done <- err }()
			select {
			case err := <-done:
				if err != nil && strings.Contains(err.Error(), "\n") {
					t.Fatalf("%s mutation %d: multi-line error %q", s.file, i, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s mutation %d: Parse still running after 10s", s.file, i)
			}
		}
	}
}

// TestParseAttachSkipsPerfExec: with 'perf record -p PID -- sleep N' the
// file also names perf's unprofiled timing child, perf-exec, which is no
// process of the recording (perf report shows none either).
func TestParseAttachSkipsPerfExec(t *testing.T) {
	f, err := Parse(readSeed(t, "attach.data"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Samples != 6 {
		t.Errorf("%d samples, want 6 as perf script counts", f.Samples)
	}
	pids := map[int]bool{}
	for _, e := range f.Events {
		switch e := e.(type) {
		case *event.Comm:
			pids[e.Pid] = true
			if e.Name != "split" {
				t.Errorf("comm %q of pid %d", e.Name, e.Pid)
			}
		case *event.Sample:
			pids[e.Pid] = true
		}
	}
	if len(pids) != 1 {
		t.Errorf("events of %d processes, want split's alone", len(pids))
	}
}
