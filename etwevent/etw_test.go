package etwevent

import (
	"bytes"
	"os"
	"testing"

	"github.com/gprof-dev/gprof/objfile"
)

// The example of MS-XCA §2.4.4: "abc" 100 times, one literal run and one
// long match whose length takes the nibble, byte and 16-bit forms.
func TestDecompressXpressSpecExample(t *testing.T) {
	in := []byte{0xff, 0xff, 0xff, 0x1f, 0x61, 0x62, 0x63, 0x17, 0x00, 0x0f, 0xff, 0x26, 0x01}
	want := bytes.Repeat([]byte("abc"), 100)
	got, err := DecompressXpress(in, len(want))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestDecompressXpressLiterals(t *testing.T) {
	in := append([]byte{0, 0, 0, 0}, "abcdefghijklmnopqrstuvwxyz"...)
	got, err := DecompressXpress(in, 26)
	if err != nil || string(got) != "abcdefghijklmnopqrstuvwxyz" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestDecompressXpressRejectsBadOffset(t *testing.T) {
	// A match before any output.
	in := []byte{0, 0, 0, 0x80, 0x08, 0x00}
	if _, err := DecompressXpress(in, 10); err == nil {
		t.Fatal("no error for a match reaching before the output")
	}
}

func TestGUIDAndBreakpadID(t *testing.T) {
	g := ParseGUID("6048fdb6-2dcd-41c1-8835-594844ce7143")
	if s := g.String(); s != "6048fdb6-2dcd-41c1-8835-594844ce7143" {
		t.Fatalf("String() = %s", s)
	}
	// In memory the first three fields are little-endian.
	if g[0] != 0xb6 || g[3] != 0x60 || g[8] != 0x88 {
		t.Fatalf("layout %x", g[:])
	}
	// The debug ID a symbol server files the PDB under (objfile's, the
	// one computation of identities) prints the GUID the same way.
	if id := objfile.PDBBreakpadID(g, 2); id != "6048FDB62DCD41C18835594844CE71432" {
		t.Fatalf("BreakpadID = %s", id)
	}
}

func TestNormalizePath(t *testing.T) {
	for in, want := range map[string]string{
		`\SystemRoot\system32\ntoskrnl.exe`:     `C:\Windows\system32\ntoskrnl.exe`,
		`\??\C:\Windows\system32\drivers\x.sys`: `C:\Windows\system32\drivers\x.sys`,
		`\Device\HarddiskVolume2\Windows\a.dll`: `\Device\HarddiskVolume2\Windows\a.dll`,
	} {
		if got := NormalizePath(in); got != want {
			t.Errorf("NormalizePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseEventTruncated(t *testing.T) {
	// A SYSTEM64 header claiming more bytes than there are.
	b := make([]byte, 0x20)
	b[2], b[3] = HeaderSystem64, 0xC0
	b[4] = 0x40
	if _, _, ok := ParseEvent(b); ok {
		t.Fatal("truncated event accepted")
	}
	b[4] = 0x20
	if _, n, ok := ParseEvent(b); !ok || n != 0x20 {
		t.Fatalf("empty-payload event: n=%d ok=%v", n, ok)
	}
	// An unknown header type (a WPP message) is skipped by its size.
	m := make([]byte, 0x30)
	m[0], m[2], m[3] = 0x1c, 0x0f, 0xC0
	if e, n, ok := ParseEvent(m); !ok || n != 0x20 || KindOf(&e) != KindOther {
		t.Fatalf("message header: n=%d ok=%v", n, ok)
	}
}

func TestDecodeProcessVersions(t *testing.T) {
	// Version 4, 64-bit: key, pid, ppid, session, exit, DTB, flags, no SID.
	p := make([]byte, 8)
	p = append(p, 0x3c, 0x0e, 0, 0, 0x2c, 0, 0, 0, 1, 0, 0, 0, 0x03, 0x01, 0, 0)
	p = append(p, make([]byte, 8)...) // DTB
	v3 := append(append([]byte(nil), p...), 0, 0, 0, 0)
	v3 = append(v3, "a.exe\x00"...)
	v3 = append(v3, 'c', 0, 0, 0)
	v4 := append(append([]byte(nil), p...), 0, 0, 0, 0) // flags
	v4 = append(v4, v3[len(p):]...)
	for _, c := range []struct {
		b   []byte
		ver uint8
	}{{v3, 3}, {v4, 4}} {
		pr, ok := DecodeProcess(c.b, true, c.ver)
		if !ok || pr.PID != 3644 || pr.ParentPID != 44 || pr.ImageName != "a.exe" || pr.CommandLine != "c" {
			t.Errorf("v%d: %+v %v", c.ver, pr, ok)
		}
	}
}

func TestDecodeThreadV4Name(t *testing.T) {
	p := []byte{0x10, 0, 0, 0, 0x20, 0, 0, 0} // PID 16, TID 32
	p = append(p, make([]byte, 7*8+8)...)
	for _, c := range "worker" {
		p = append(p, byte(c), 0)
	}
	p = append(p, 0, 0)
	th, ok := DecodeThread(p, true, 4)
	if !ok || th.PID != 16 || th.TID != 32 || th.Name != "worker" {
		t.Fatalf("v4: %+v %v", th, ok)
	}
	th, ok = DecodeThread(p, true, 3)
	if !ok || th.Name != "" {
		t.Fatalf("v3 has no name: %+v %v", th, ok)
	}
	// 32-bit pointers.
	p32 := append([]byte{1, 0, 0, 0, 2, 0, 0, 0}, make([]byte, 7*4+8)...)
	p32 = append(p32, 'x', 0, 0, 0)
	if th, ok := DecodeThread(p32, false, 4); !ok || th.Name != "x" {
		t.Fatalf("v4 32-bit: %+v %v", th, ok)
	}
}

func TestKindOfLost(t *testing.T) {
	for op, want := range map[uint8]Kind{32: KindLost, 33: KindLost, 34: KindLost, 0: KindOther} {
		e := Event{HeaderType: HeaderFull64, Provider: LostEventGUID, Opcode: op}
		if got := KindOf(&e); got != want {
			t.Errorf("RT_LostEvent opcode %d: kind %d, want %d", op, got, want)
		}
	}
	// The logger's EndExtension (EventTrace opcode 32) is not a loss.
	e := Event{HeaderType: HeaderFull64, Provider: ParseGUID("68fdd900-4a3e-11d1-84f4-0000f80464e3"), Opcode: 32}
	if KindOf(&e) != KindOther {
		t.Error("EventTrace EndExtension counted as lost")
	}
}

// TestWalkETL walks the cut of the PerfView trace: its logfile header
// first, then events of several CPUs' compressed buffers, and nothing
// from a file cut inside its first buffer.
func TestWalkETL(t *testing.T) {
	data, err := os.ReadFile("testdata/cut.etl")
	if err != nil {
		t.Fatal(err)
	}
	if !SniffETL(data[:ETLSniffSize]) || SniffETL(data[:bufferHeaderSize+0x1f]) {
		t.Fatal("SniffETL")
	}
	var h LogHeader
	events, bufs := 0, map[int]bool{}
	cpus := map[int]bool{}
	err = WalkETL(bytes.NewReader(data), func(e *Event, cpu, buf int) {
		if events == 0 {
			if KindOf(e) != KindHeader {
				t.Fatalf("first event is %v, not the logfile header", KindOf(e))
			}
			if h, err = ParseLogHeader(e); err != nil {
				t.Fatal(err)
			}
		}
		events++
		bufs[buf], cpus[cpu] = true, true
	})
	if err != nil {
		t.Fatal(err)
	}
	if h.CPUs != 8 || h.PointerSize != 8 || h.TicksPerSecond() != 10_000_000 || h.Major != 6 || h.Minor != 2 || h.Build != 9200 {
		t.Errorf("header %+v", h)
	}
	if len(bufs) != 4 || len(cpus) < 2 || events < 500 {
		t.Errorf("%d events in %d buffers of %d CPUs", events, len(bufs), len(cpus))
	}
	if err := WalkETL(bytes.NewReader(data[:0x30]), func(*Event, int, int) {}); err == nil {
		t.Error("no error for a file cut inside its first buffer")
	}
}
