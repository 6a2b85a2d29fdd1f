package unwind

import (
	"fmt"
	"testing"
)

func TestAddressSpace(t *testing.T) {
	var as AddressSpace
	as.Add(Mapping{Start: 0x1000, End: 0x5000, FileOffset: 0, Path: "a"})
	as.Add(Mapping{Start: 0x8000, End: 0x9000, Path: "b"})
	// Overlapping the middle of a splits it, as mmap(MAP_FIXED) would.
	as.Add(Mapping{Start: 0x2000, End: 0x3000, Path: "c"})
	want := "[{4096 8192 0 a} {8192 12288 0 c} {12288 20480 8192 a} {32768 36864 0 b}]"
	if got := fmtMappings(as.Mappings()); got != want {
		t.Fatalf("after Add: %s, want %s", got, want)
	}
	as.Remove(0x4000, 0x8800)
	want = "[{4096 8192 0 a} {8192 12288 0 c} {12288 16384 8192 a} {34816 36864 2048 b}]"
	if got := fmtMappings(as.Mappings()); got != want {
		t.Fatalf("after Remove: %s, want %s", got, want)
	}
	for _, c := range []struct {
		addr uint64
		path string
	}{{0xfff, ""}, {0x1000, "a"}, {0x2fff, "c"}, {0x3000, "a"}, {0x4000, ""}, {0x8800, "b"}, {0x9000, ""}} {
		m, ok := as.Lookup(c.addr)
		if m.Path != c.path || ok != (c.path != "") {
			t.Errorf("Lookup(%#x) = %q, %v; want %q", c.addr, m.Path, ok, c.path)
		}
	}
}

func fmtMappings(ms []Mapping) string {
	var s []string
	for _, m := range ms {
		s = append(s, fmt.Sprintf("{%d %d %d %s}", m.Start, m.End, m.FileOffset, m.Path))
	}
	return fmt.Sprint(s)
}
