package etw

import (
	"encoding/binary"
	"testing"
	"time"
	"unicode/utf16"
)

func TestETWInterval(t *testing.T) {
	for _, c := range []struct {
		d      time.Duration
		units  uint32
		notice bool
	}{
		{time.Millisecond, 10000, false},
		{0, 10000, false},
		{250 * time.Microsecond, 2500, false},
		{100 * time.Microsecond, 1221, true}, // --rate 10000
		{time.Second, 1_000_000, true},
		{122100 * time.Nanosecond, 1221, false},
	} {
		u, n := etwInterval(c.d)
		if u != c.units || (n != "") != c.notice {
			t.Errorf("etwInterval(%v) = %d, %q; want %d, notice %v", c.d, u, n, c.units, c.notice)
		}
	}
}

func TestETWSessionName(t *testing.T) {
	if n := etwSessionName(42); n != "gprof-kernel-42" {
		t.Fatal(n)
	}
	if isStaleETWSession(etwSessionName(42), 42) || !isStaleETWSession(etwSessionName(7), 42) ||
		isStaleETWSession("NT Kernel Logger", 42) {
		t.Fatal("isStaleETWSession: own session, another run's, or WPR's misjudged")
	}
}

// TestETWProperties checks EVENT_TRACE_PROPERTIES's fields at the offsets
// evntrace.h gives them on 64-bit Windows.
func TestETWProperties(t *testing.T) {
	guid := newSessionGUID()
	if guid == systemTraceControlGUID || guid == newSessionGUID() || guid[7]>>4 != 4 {
		t.Fatalf("session GUID %v: the NT Kernel Logger's, not random, or not version 4", guid)
	}
	b := etwProperties("gprof-kernel-42", guid, 2)
	le := binary.LittleEndian
	if int(le.Uint32(b[0:])) != len(b) {
		t.Errorf("Wnode.BufferSize %d, want %d", le.Uint32(b[0:]), len(b))
	}
	if g := string(b[24:40]); g != string(guid[:]) {
		t.Errorf("Wnode.Guid is not the session's own GUID")
	}
	if le.Uint32(b[40:]) != 1 || le.Uint32(b[44:]) != 0x20000 {
		t.Errorf("ClientContext %d Flags %#x", le.Uint32(b[40:]), le.Uint32(b[44:]))
	}
	if le.Uint32(b[64:]) != 0x02000100 {
		t.Errorf("LogFileMode %#x, want real-time system logger", le.Uint32(b[64:]))
	}
	if le.Uint32(b[72:]) != 0x01000007 {
		t.Errorf("EnableFlags %#x, want PROCESS|THREAD|IMAGE_LOAD|PROFILE", le.Uint32(b[72:]))
	}
	off := le.Uint32(b[116:])
	if off != 120 {
		t.Fatalf("LoggerNameOffset %d", off)
	}
	var u []uint16
	for i := int(off); le.Uint16(b[i:]) != 0; i += 2 {
		u = append(u, le.Uint16(b[i:]))
	}
	if name := string(utf16.Decode(u)); name != "gprof-kernel-42" {
		t.Errorf("logger name %q", name)
	}
	if lf := le.Uint32(b[112:]); int(lf) <= int(off)+2*len("gprof-kernel-42") || int(lf)+2048 > len(b) {
		t.Errorf("LogFileNameOffset %d overlaps the name or the end (%d)", lf, len(b))
	}
}
