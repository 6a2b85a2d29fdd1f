package symbolize

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
)

const kallsymsSample = `ffffffff81000000 T _stext
ffffffff81000000 t local_alias
ffffffff81000010 T entry_a
ffffffff81000100 D some_data
ffffffff81000200 T entry_b
ffffffff81000300 W weak_c
ffffffffc0201000 t mod_func	[mymod]
ffffffffc0201080 T mod_func2	[mymod]
`

func TestKallsyms(t *testing.T) {
	k, err := ParseKallsyms(strings.NewReader(kallsymsSample))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr uint64
		name string
		mod  string
		ok   bool
	}{
		{0xffffffff81000000, "_stext", "", true},
		{0xffffffff81000005, "_stext", "", true},
		{0xffffffff81000150, "entry_a", "", true}, // data symbols are skipped
		{0xffffffff81000301, "weak_c", "", true},
		{0xffffffffc0201001, "mod_func", "mymod", true},
		{0xffffffffc02010ff, "mod_func2", "mymod", true},
		{0xffffffff80000000, "", "", false},
		{0xffffffff81100000, "", "", false}, // far past weak_c, before the modules
	} {
		s, ok := k.Lookup(tc.addr)
		if ok != tc.ok || s.Name != tc.name || s.Module != tc.mod {
			t.Errorf("Lookup(%#x) = %+v, %v; want %s [%s] %v", tc.addr, s, ok, tc.name, tc.mod, tc.ok)
		}
	}
	zeroed := regexp.MustCompile(`(?m)^[0-9a-f]+`).ReplaceAllString(kallsymsSample, "0000000000000000")
	if _, err := ParseKallsyms(strings.NewReader(zeroed)); !errors.Is(err, ErrKallsymsUnavailable) {
		t.Errorf("zeroed kallsyms: err = %v", err)
	}
}

func TestKallsymsLive(t *testing.T) {
	k, err := LoadKallsyms()
	if errors.Is(err, ErrKallsymsUnavailable) || errors.Is(err, os.ErrNotExist) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile("/proc/kallsyms")
	n := 0
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != "T" || (f[2] != "schedule" && f[2] != "do_syscall_64" && f[2] != "vfs_read") {
			continue
		}
		a, _ := parseHex(f[0])
		s, ok := k.Lookup(a + 1)
		if !ok || s.Name != f[2] || s.Addr != a || s.Size == 0 {
			t.Errorf("Lookup(%#x) = %+v, %v; want %s", a+1, s, ok, f[2])
		}
		n++
	}
	if n == 0 {
		t.Skip("no well-known kernel symbols listed")
	}
	if id, err := KernelBuildID(); err == nil && len(id) < 8 {
		t.Errorf("kernel build-id %x is too short", id)
	}
}

func FuzzParseKallsyms(f *testing.F) {
	f.Add(kallsymsSample)
	f.Add("0000000000000000 T foo\n")
	f.Add("zz T\n\n ffff t x [m] extra\n")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKallsyms(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, sym := range k.syms {
			if got, ok := k.Lookup(sym.addr); !ok || got.Addr != sym.addr {
				t.Fatalf("Lookup(%#x) = %+v, %v", sym.addr, got, ok)
			}
		}
	})
}

const perfMapSample = `7f0000001000 40 LazyCompile:~foo file.js:1
0x7f0000001040 0x20 bar baz with spaces
7f0000002000 1000 big
7f0000002100 10 reused
garbage line
7f0000003000 0 empty
`

func TestPerfMap(t *testing.T) {
	m, err := ParsePerfMap(strings.NewReader(perfMapSample))
	if err != nil {
		t.Fatal(err)
	}
	if m.Len() != 4 {
		t.Errorf("Len = %d, want 4", m.Len())
	}
	for _, tc := range []struct {
		addr uint64
		name string
	}{
		{0x7f0000001000, "LazyCompile:~foo file.js:1"},
		{0x7f000000103f, "LazyCompile:~foo file.js:1"},
		{0x7f0000001040, "bar baz with spaces"},
		{0x7f0000001060, ""},
		{0x7f0000002050, "big"},
		{0x7f0000002105, "reused"}, // the later line wins
		{0x7f0000002200, "big"},
		{0x7f0000003000, ""},
	} {
		s, ok := m.Lookup(tc.addr)
		if ok != (tc.name != "") || s.Name != tc.name {
			t.Errorf("Lookup(%#x) = %+v, %v; want %q", tc.addr, s, ok, tc.name)
		}
	}
}

func FuzzParsePerfMap(f *testing.F) {
	f.Add(perfMapSample)
	f.Add("ffffffffffffffff 2 wrap\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, _ := ParsePerfMap(strings.NewReader(s))
		for _, sym := range m.syms {
			if sym.start+sym.size < sym.start {
				t.Fatalf("entry %+v wraps", sym)
			}
			if _, ok := m.Lookup(sym.start); !ok {
				t.Fatalf("Lookup(%#x) found nothing", sym.start)
			}
		}
	})
}
