package pdb

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const cppcon = "testdata/CppCon.pdb"

func open(t testing.TB) *File {
	t.Helper()
	f, err := Open(cppcon)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestIdentity(t *testing.T) {
	f := open(t)
	// llvm-pdbutil dump -summary: GUID {12DC0A4F-BD7D-4F2A-A9BE-263BACAEB467}, Age 5.
	if id := f.BreakpadID(); id != "12DC0A4FBD7D4F2AA9BE263BACAEB4675" {
		t.Errorf("BreakpadID = %s", id)
	}
	if len(f.Sections) != 5 || f.Sections[0].Name != ".text" || f.Sections[0].RVA != 0x1000 {
		t.Errorf("sections = %+v", f.Sections)
	}
}

func TestLookup(t *testing.T) {
	f := open(t)
	for _, c := range []struct {
		rva  uint32
		name string
		line int
	}{
		{0x1000, "main", 8},
		{0x100b, "main", 9},
		{0x12ea, "__security_check_cookie", 0},
		{0x13bd + 0x10, "__scrt_common_main_seh", 0},
		{0x153f, "mainCRTStartup", 0},
	} {
		s, ok := f.Lookup(c.rva)
		if !ok || s.Name != c.name || c.line != 0 && s.Line != c.line {
			t.Errorf("Lookup(%#x) = %+v, %v; want %s line %d", c.rva, s, ok, c.name, c.line)
		}
	}
	// Identical functions folded by the linker share one address.
	s, _ := f.Lookup(0x1954)
	names := append([]string{s.Name}, s.Folded...)
	for _, want := range []string{"_get_startup_commit_mode", "_matherr", "__scrt_initialize_winrt"} {
		if !slices.Contains(names, want) {
			t.Errorf("Lookup(0x1954): %v lacks %s", names, want)
		}
	}
	if s, _ := f.Lookup(0x1000); !slices.Equal(s.Publics, []string{"_main"}) {
		t.Errorf("main's public names: %v", s.Publics)
	}
	if s, _ := f.Lookup(0x1000); !strings.HasSuffix(s.File, `CppCon\CppCon.cpp`) {
		t.Errorf("main's file = %q", s.File)
	}
	if s, ok := f.Lookup(0x10000000); ok {
		t.Errorf("Lookup far outside = %+v", s)
	}
}

// pdbs are the PDBs compared with llvm-pdbutil: a native MSVC one and a
// .NET Framework (Windows PDB) one.
var pdbs = []string{cppcon, "testdata/CsDesktopProj.pdb"}

func pdbutil(t *testing.T, file string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("llvm-pdbutil")
	if err != nil {
		t.Skip("llvm-pdbutil not installed (Debian package llvm): cannot compare with it")
	}
	out, err := exec.Command(path, append(args, file)...).Output()
	if err != nil {
		t.Fatalf("llvm-pdbutil %v: %v", args, err)
	}
	return string(out)
}

// TestPublicsMatchLLVM compares every public symbol with llvm-pdbutil's.
func TestPublicsMatchLLVM(t *testing.T) {
	for _, file := range pdbs {
		t.Run(file, func(t *testing.T) { publicsMatchLLVM(t, file) })
	}
}

func publicsMatchLLVM(t *testing.T, file string) {
	out := pdbutil(t, file, "dump", "-publics")
	re := regexp.MustCompile("S_PUB32 \\[size = \\d+\\] `(.*)`\\n\\s+flags = (.*), addr = (\\d+):(\\d+)")
	want := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		sec, _ := strconv.Atoi(m[3])
		off, _ := strconv.Atoi(m[4]) // llvm-pdbutil prints these offsets in decimal
		want[fmt.Sprintf("%s %d:%d %v", m[1], sec, off, strings.Contains(m[2], "function"))] = true
	}
	if len(want) == 0 || file == cppcon && len(want) < 100 {
		t.Fatalf("parsed only %d publics from llvm-pdbutil", len(want))
	}
	f, err := Open(file)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, p := range f.Publics {
		got[fmt.Sprintf("%s %d:%d %v", p.Name, p.Section, p.Offset, p.Function)] = true
		if p.Valid && p.RVA != f.Sections[p.Section-1].RVA+p.Offset {
			t.Errorf("%s: RVA %#x", p.Name, p.RVA)
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("missing public %s", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("extra public %s", k)
		}
	}
}

// TestProcsMatchLLVM compares every module procedure with llvm-pdbutil's.
func TestProcsMatchLLVM(t *testing.T) {
	out := pdbutil(t, cppcon, "dump", "-symbols")
	re := regexp.MustCompile("S_[GL]PROC32(?:_ID)? \\[size = \\d+\\] `(.*)`\\n\\s+parent = \\d+, end = \\d+, addr = (\\d+):(\\d+), code size = (\\d+)")
	f := open(t)
	have := map[string]bool{}
	for _, fn := range f.Funcs {
		have[fmt.Sprintf("%s %#x %d", fn.Name, fn.RVA, fn.Size)] = true
	}
	n := 0
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		sec, _ := strconv.Atoi(m[2])
		off, _ := strconv.Atoi(m[3])
		size, _ := strconv.Atoi(m[4])
		rva := f.Sections[sec-1].RVA + uint32(off)
		if k := fmt.Sprintf("%s %#x %d", m[1], rva, size); !have[k] {
			t.Errorf("missing procedure %s", k)
		}
		if s, ok := f.Lookup(rva); !ok || s.RVA != rva {
			t.Errorf("Lookup(%#x) = %+v, want a function starting there (%s)", rva, s, m[1])
		}
		n++
	}
	if n < 50 {
		t.Fatalf("parsed only %d procedures from llvm-pdbutil", n)
	}
}

// TestLinesMatchLLVM compares every line-table entry with llvm-pdbutil's.
func TestLinesMatchLLVM(t *testing.T) {
	for _, file := range pdbs {
		t.Run(file, func(t *testing.T) { linesMatchLLVM(t, file) })
	}
}

func linesMatchLLVM(t *testing.T, file string) {
	out := pdbutil(t, file, "dump", "-l")
	f, err := Open(file)
	if err != nil {
		t.Fatal(err)
	}
	fileRe := regexp.MustCompile(`^(\S.*) \((?:MD5|SHA1|SHA256|None|no checksum).*\)$`)
	blockRe := regexp.MustCompile(`^\s+(\d{4}):([0-9A-F]{8})-([0-9A-F]{8}), line/(?:column/)?addr entries = \d+`)
	entryRe := regexp.MustCompile(`(\d+|ASI)\s+([0-9A-F]{8})`)
	want := map[string]bool{}
	file, sec := "", 0
	for _, l := range strings.Split(out, "\n") {
		if m := fileRe.FindStringSubmatch(l); m != nil && !strings.HasPrefix(l, "Mod ") {
			file = m[1]
			continue
		}
		if m := blockRe.FindStringSubmatch(l); m != nil {
			sec, _ = strconv.Atoi(m[1])
			continue
		}
		if !strings.HasPrefix(l, "   ") || sec == 0 {
			continue
		}
		for _, m := range entryRe.FindAllStringSubmatch(l, -1) {
			if m[1] == "ASI" {
				continue
			}
			off, _ := strconv.ParseUint(m[2], 16, 32)
			want[fmt.Sprintf("%#x %s %s", f.Sections[sec-1].RVA+uint32(off), m[1], file)] = true
		}
	}
	if len(want) == 0 || file == cppcon && len(want) < 300 {
		t.Fatalf("parsed only %d line entries from llvm-pdbutil", len(want))
	}
	got := map[string]bool{}
	for _, l := range f.Lines() {
		got[fmt.Sprintf("%#x %d %s", l.RVA, l.Line, l.File)] = true
	}
	for k := range want {
		if !got[k] {
			t.Errorf("missing line %s", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("extra line %s", k)
		}
	}
}

func TestParseRejects(t *testing.T) {
	data, err := os.ReadFile(cppcon)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{nil, []byte("not a pdb"), data[:64], data[:4096]} {
		if _, err := Parse(b); err == nil {
			t.Errorf("Parse(%d bytes) succeeded", len(b))
		}
	}
}

// A stream the directory says is larger than the file is refused before
// anything is allocated for it (fuzzing found workers dying of this).
func TestReadHugeStream(t *testing.T) {
	data, err := os.ReadFile(cppcon)
	if err != nil {
		t.Fatal(err)
	}
	m, err := openMSF(data)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = m.read([]uint32{1, 2, 3}, 1<<30)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a 1 GB stream was read")
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("%d bytes allocated for it", n)
	}
}

func FuzzParse(f *testing.F) {
	// minimal.pdb first: CppCon.pdb cut to what Parse reads, in 512-byte
	// blocks (see TestMinimalPDB), small enough for mutations to reach
	// its streams.
	small, err := os.ReadFile("testdata/minimal.pdb")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(small)
	data, err := os.ReadFile(cppcon)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	if small, err := os.ReadFile("testdata/CsDesktopProj.pdb"); err == nil {
		f.Add(small)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b)
		if err != nil {
			return
		}
		p.Lookup(0x1000)
		p.Lookup(0)
		p.Lines()
		p.BreakpadID()
	})
}
