package jitdump

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"
)

// The dumps in testdata are cut from real ones (see testdata/README.md):
// whole records, in their order, of CPython 3.13's -X perf_jit and of
// node 20's --perf-prof --perf-prof-unwinding-info.
func readDump(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPythonDump(t *testing.T) {
	f, err := Parse(readDump(t, "python3.13.dump"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Version != 1 || f.Header.Pid == 0 {
		t.Errorf("header %+v", f.Header)
	}
	if len(f.Code) != 4 {
		t.Fatalf("%d code loads, want 4", len(f.Code))
	}
	var inner *Code
	for i := range f.Code {
		c := &f.Code[i]
		if !strings.HasPrefix(c.Name, "py::") || c.Size != 11 {
			t.Errorf("code %q of %d bytes, want a py:: trampoline of 11", c.Name, c.Size)
		}
		// CPython places its .eh_frame right after the code, rounded to
		// 8 bytes, as its .eh_frame_hdr says.
		if c.EHFrame == nil || c.EHFrameAt != c.Addr+16 {
			t.Errorf("%s: eh_frame of %d bytes at code+%d, want it at code+16", c.Name, len(c.EHFrame), c.EHFrameAt-c.Addr)
		}
		if strings.HasPrefix(c.Name, "py::inner:") {
			inner = c
		}
	}
	if inner == nil {
		t.Fatal("no py::inner")
	}
	// A return address from the trampoline's call (at +6) is in it.
	if c, ok := f.Lookup(inner.Addr + 5); !ok || c.Name != inner.Name {
		t.Errorf("Lookup(inner+5) = %v, %v", c, ok)
	}
	if _, ok := f.Lookup(inner.Addr + 11); ok {
		t.Errorf("Lookup past the code's end found something")
	}
}

func TestNodeDump(t *testing.T) {
	f, err := Parse(readDump(t, "node20.dump"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Machine != 62 {
		t.Errorf("machine %d, want 62 (x86-64)", f.Header.Machine)
	}
	var hot, util *Code
	for i := range f.Code {
		switch c := &f.Code[i]; {
		case strings.HasPrefix(c.Name, "JS:*hotLoop "):
			hot = c
		case util == nil:
			util = c
		}
	}
	if hot == nil || util == nil {
		t.Fatalf("no optimized hotLoop and builtin in %d loads", len(f.Code))
	}
	// V8's line addresses are 0x40 past the code's; placed, the first
	// is the code's start.
	if len(util.Lines) == 0 || util.Lines[0].Addr != util.Addr {
		t.Fatalf("%s: lines %+v", util.Name, util.Lines)
	}
	l, ok := util.LineAt(util.Addr + 0x30)
	if !ok || l.File != "node:internal/util" || l.Line < 500 {
		t.Errorf("line at +0x30 of %s: %+v %v; want node:internal/util", util.Name, l, ok)
	}
	// node 20 damages the file name of a script's lines (its first 16
	// bytes, NULs among them), so the entries after the first are
	// misread: the table is dropped rather than misplaced.
	if len(hot.Lines) != 0 {
		t.Errorf("%s: %d lines from a damaged table: %+v", hot.Name, len(hot.Lines), hot.Lines[:min(3, len(hot.Lines))])
	}
	if hot.EHFrame == nil || hot.EHFrameAt != hot.Addr+(hot.Size+7)&^7 {
		t.Errorf("eh_frame %d bytes at code+%d", len(hot.EHFrame), hot.EHFrameAt-hot.Addr)
	}
}

// A dump still being written ends anywhere: every prefix parses, and
// continuing from it reads the rest.
func TestDumpGrows(t *testing.T) {
	for _, name := range []string{"python3.13.dump", "node20.dump"} {
		data := readDump(t, name)
		full, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		for n := headerMin; n <= len(data); n += 7 {
			f, err := Parse(data[:n])
			if err != nil {
				t.Fatalf("%s cut at %d: %v", name, n, err)
			}
			if err := f.Continue(data); err != nil {
				t.Fatalf("%s continued from %d: %v", name, n, err)
			}
			if len(f.Code) != len(full.Code) {
				t.Fatalf("%s continued from %d: %d loads, want %d", name, n, len(f.Code), len(full.Code))
			}
			for i := range f.Code {
				a, b := f.Code[i], full.Code[i]
				if a.Name != b.Name || a.Addr != b.Addr || a.EHFrameAt != b.EHFrameAt || len(a.Lines) != len(b.Lines) {
					t.Fatalf("%s continued from %d: load %d differs", name, n, i)
				}
			}
		}
	}
}

// A code move (which no runtime here writes: this one is made by hand)
// moves the name, lines and unwind information.
func TestCodeMove(t *testing.T) {
	data := readDump(t, "python3.13.dump")
	f0, _ := Parse(data)
	c := f0.Code[len(f0.Code)-1]
	to := c.Addr + 0x100000
	rec := make([]byte, prefixLen+48)
	binary.LittleEndian.PutUint32(rec[0:], recCodeMove)
	binary.LittleEndian.PutUint32(rec[4:], uint32(len(rec)))
	binary.LittleEndian.PutUint64(rec[prefixLen+16:], c.Addr)
	binary.LittleEndian.PutUint64(rec[prefixLen+24:], to)
	binary.LittleEndian.PutUint64(rec[prefixLen+32:], c.Size)
	binary.LittleEndian.PutUint64(rec[prefixLen+40:], c.Index)
	f, err := Parse(append(bytes.Clone(data), rec...))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := f.Lookup(to + 1)
	if !ok || m.Name != c.Name || m.EHFrameAt != to+16 {
		t.Errorf("moved code: %+v %v", m, ok)
	}
}

func TestNotADump(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("JiT"), []byte("\x7fELF\x02\x01\x01\x00"), readDump(t, "python3.13.dump")[:20]} {
		if _, err := Parse(b); err == nil {
			t.Errorf("Parse(%q) succeeded", b)
		}
	}
	if pid, ok := PidOfPath("/tmp/jit-1234.dump"); !ok || pid != 1234 {
		t.Errorf("PidOfPath = %d, %v", pid, ok)
	}
	for _, p := range []string{"/tmp/jit-12a.dump", "/tmp/xjit-1.dump", "/tmp/jit-1.dump.bak"} {
		if _, ok := PidOfPath(p); ok {
			t.Errorf("PidOfPath(%q) matched", p)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"python3.13.dump", "node20.dump"} {
		b := readDump(f, name)
		f.Add(b)
		f.Add(b[:headerMin])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Parse(b)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		for i := range d.Code {
			c := &d.Code[i]
			if c.Addr+c.Size < c.Addr {
				t.Fatalf("code %+v wraps", c)
			}
			if _, ok := d.Lookup(c.Addr); !ok {
				t.Fatalf("Lookup(%#x) found nothing", c.Addr)
			}
			c.LineAt(c.Addr)
		}
	})
}
