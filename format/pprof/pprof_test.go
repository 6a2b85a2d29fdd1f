package pprof

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/profile"
)

// sample builds a two-thread profile with one library, a kernel frame and
// a label frame, its names in the symbol table (one address inlined).
func sample() *profile.Profile {
	lib := profile.Lib{Start: 0x400000, End: 0x500000, Offset: 0, Name: "prog", Path: "/bin/prog",
		DebugName: "prog", BreakpadID: "0123456789ABCDEF0123456789ABCDEF0", CodeID: "67452301ab89efcd0123456789abcdef"}
	p := &profile.Profile{Meta: profile.Meta{Product: "gprof", Interval: time.Millisecond, Duration: 5e6, StartTime: time.Unix(1700000000, 0)}}
	pr := &profile.Process{Pid: 10, Name: "prog", Libs: []profile.Lib{lib}, ExitCode: -1}
	p.Processes = []*profile.Process{pr}
	p.Symbols = &profile.SymbolTable{}
	p.Symbols.Add(lib.Key(), 0x1000, []profile.SymbolFrame{{Function: "outer", File: "a.c", Line: 3}, {Function: "inner", File: "a.c", Line: 9}})
	p.Symbols.Add(lib.Key(), 0x2000, []profile.SymbolFrame{{Function: "main", File: "m.c", Line: 1}})
	for tid, leaf := range map[int]uint64{10: 0x401000, 11: 0x401000} {
		th := &profile.Thread{Tid: tid, Name: "t", Main: tid == 10}
		s := th.InternStack([]profile.Frame{{Address: leaf}, {Address: 0x402000}, {Label: "root"}})
		for i := 0; i < tid-8; i++ {
			th.Samples.Add(s, int64(i)*1e6, 1e6)
		}
		pr.Threads = append(pr.Threads, th)
	}
	return p
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("pprof output is not gzipped: %v", err)
	}
	head := make([]byte, 16)
	zr.Read(head)
	if !Sniff(head) {
		t.Fatalf("Sniff rejects our own output % x", head)
	}
	p, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Processes) != 1 || len(p.Processes[0].Threads) != 2 {
		t.Fatalf("want 1 process with 2 threads, got %+v", p.Processes)
	}
	pr := p.Processes[0]
	if pr.Pid != 10 || pr.Name != "prog" || len(pr.Libs) != 1 || pr.Libs[0].BreakpadID != "0123456789ABCDEF0123456789ABCDEF0" {
		t.Fatalf("process or lib identity lost: %+v", pr)
	}
	var total int
	for _, th := range pr.Threads {
		n := 0
		for i := range th.Samples.Stack {
			w := 1
			if th.Samples.Weight != nil {
				w = int(th.Samples.Weight[i])
			}
			n += w
		}
		total += n
		if want := th.Tid - 8; n != want {
			t.Errorf("thread %d: %d samples, want %d", th.Tid, n, want)
		}
		// Leaf first: inner, outer (one address, two levels), then main, root.
		var names []string
		for s := th.Samples.Stack[0]; s >= 0; s = th.Stacks.Prefix[s] {
			f := th.Frames.Frames[th.Stacks.Frame[s]]
			if f.Label != "" {
				names = append(names, f.Label)
				continue
			}
			key, rel, _ := pr.Locate(f)
			for _, sf := range p.Symbols.Lookup(key, rel) {
				names = append(names, sf.Function)
			}
		}
		if got := names; len(got) != 4 || got[0] != "outer" || got[1] != "inner" || got[2] != "main" || got[3] != "root" {
			t.Errorf("thread %d stack %v, want [outer inner main root] (symbols outer-first per address)", th.Tid, got)
		}
	}
	if total != 5 {
		t.Errorf("%d samples, want 5", total)
	}
}

func TestSniff(t *testing.T) {
	for _, c := range []struct {
		head string
		want bool
	}{
		{"{\"meta\":", false}, {"\n  {", false}, {"[1]", false}, {"\x0a\x04\x08\x01", true}, {"\x08", false}, {"", false}, {"\xff\xff", false},
	} {
		if got := Sniff([]byte(c.head)); got != c.want {
			t.Errorf("Sniff(%q) = %v", c.head, got)
		}
	}
}

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, sample())
	f.Add(buf.Bytes())
	f.Add([]byte("\x0a\x04\x08\x01\x10\x02"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		// Go's fuzzer has no per-input time limit: a hang becomes a crash.
		tm := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("HANG %q", data)) })
		defer tm.Stop()
		p, err := Read(bytes.NewReader(data))
		if err == nil && p == nil {
			t.Fatal("nil profile without an error")
		}
	})
}
