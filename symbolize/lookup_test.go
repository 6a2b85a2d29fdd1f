package symbolize

import (
	"bufio"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/objfile"
)

// oracleFrame is one level of addr2line -i output.
type oracleFrame struct {
	fn   string
	file string // base name
	line int
}

var discriminator = regexp.MustCompile(` \(discriminator \d+\)$`)

// addr2line symbolizes svmas with binutils, returning frames innermost
// first as addr2line prints them.
func addr2line(t *testing.T, bin string, demangle bool, svmas []uint64) [][]oracleFrame {
	args := []string{"-a", "-f", "-i", "-e", bin}
	if demangle {
		args = append(args, "-C")
	}
	for _, a := range svmas {
		args = append(args, fmt.Sprintf("%#x", a))
	}
	out := run(t, "addr2line", args...)
	var res [][]oracleFrame
	sc := bufio.NewScanner(strings.NewReader(out))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	for i := 0; i < len(lines); {
		if !strings.HasPrefix(lines[i], "0x") {
			t.Fatalf("addr2line output out of step at %q", lines[i])
		}
		i++
		var fr []oracleFrame
		for i+1 < len(lines) && !strings.HasPrefix(lines[i], "0x") {
			fn := lines[i]
			if demangle {
				fn = withoutSignature(fn)
			}
			loc := discriminator.ReplaceAllString(lines[i+1], "")
			file, ln, _ := strings.Cut(loc, ":")
			n, _ := strconv.Atoi(ln)
			fr = append(fr, oracleFrame{fn, filepath.Base(file), n})
			i += 2
		}
		res = append(res, fr)
	}
	return res
}

// withoutSignature drops what Demangle leaves out of a fully demangled
// C++ name: the parameter list and, for templates, the return type.
func withoutSignature(fn string) string {
	depth, cut := 0, 0
	for i, c := range fn {
		switch c {
		case '<':
			depth++
		case '>':
			depth--
		case ' ':
			if depth == 0 && !strings.HasSuffix(fn[:i], "operator") {
				cut = i + 1
			}
		case '(':
			if depth == 0 && i > 0 {
				return fn[cut:i]
			}
		}
	}
	return fn[cut:]
}

// funcRange finds a function's address range in the file's symbol table.
func funcRange(t *testing.T, bin, name string) (lo, hi uint64) {
	f, err := objfile.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.SymbolTable()
	for _, s := range syms {
		if s.Name == name {
			return s.Addr, s.Addr + s.Size
		}
	}
	t.Fatalf("%s: no symbol %s", bin, name)
	return
}

// compareWithAddr2line checks every instruction-ish address (each byte)
// of the named functions against addr2line.
func compareWithAddr2line(t *testing.T, bin string, demangle bool, funcs ...string) {
	b, err := Open(bin, NoSeparateDebug())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	compareBinary(t, b, bin, demangle, funcs...)
}

func compareBinary(t *testing.T, b *Binary, bin string, demangle bool, funcs ...string) {
	base := b.Identity().Base
	var svmas []uint64
	for _, fn := range funcs {
		lo, hi := funcRange(t, bin, fn)
		for a := lo; a < hi; a++ {
			svmas = append(svmas, a)
		}
	}
	want := addr2line(t, bin, demangle, svmas)
	bad := 0
	for i, a := range svmas {
		got := b.Lookup(a - base)
		w := want[i]
		var g []oracleFrame
		for j := len(got) - 1; j >= 0; j-- {
			g = append(g, oracleFrame{got[j].Function, filepath.Base(got[j].File), got[j].Line})
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			bad++
			if bad <= 5 {
				t.Errorf("%#x: got %v, addr2line says %v", a, g, w)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d addresses differ from addr2line", bad, len(svmas))
	}
}

func TestLookupC(t *testing.T) {
	for _, dw := range []string{"-gdwarf-4", "-gdwarf-5"} {
		t.Run(dw, func(t *testing.T) {
			bin := build(t, "prog"+dw, "gcc", dw, "-O2", "-o", "OUT", "TESTDATA/prog.c")
			compareWithAddr2line(t, bin, false, "work", "helper", "main")
		})
	}
}

func TestLookupInlineChain(t *testing.T) {
	bin := build(t, "prog-gdwarf-5", "gcc", "-gdwarf-5", "-O2", "-o", "OUT", "TESTDATA/prog.c")
	b, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	lo, hi := funcRange(t, bin, "work")
	found := false
	for a := lo; a < hi && !found; a++ {
		fr := b.Lookup(a)
		if len(fr) == 3 && fr[0].Function == "work" && fr[1].Function == "sum_squares" && fr[2].Function == "square" {
			found = true
			if fr[0].Line != 22 || fr[1].Line != 16 || fr[0].FuncAddr != lo || fr[0].FuncSize != hi-lo {
				t.Errorf("chain at %#x: %+v", a, fr)
			}
		}
	}
	if !found {
		t.Error("no address in work shows work → sum_squares → square")
	}
}

func TestLookupCompressedDWARF(t *testing.T) {
	for _, z := range []string{"zlib", "zstd"} {
		t.Run(z, func(t *testing.T) {
			bin := buildOrSkip(t, "prog-z"+z, "gcc", "-g", "-O2", "-gz="+z, "-o", "OUT", "TESTDATA/prog.c")
			compareWithAddr2line(t, bin, false, "work")
		})
	}
}

func TestLookupCPlusPlus(t *testing.T) {
	bin := build(t, "progcc", "g++", "-g", "-O2", "-o", "OUT", "TESTDATA/prog.cc")
	compareWithAddr2line(t, bin, true, "_ZNK3geo3BoxIiE5totalEi", "_ZNK3geo3BoxIdE5totalEi", "_ZN3geo4areaEii", "main")
	b, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	lo, _ := funcRange(t, bin, "_ZNK3geo3BoxIdE5totalEi")
	if fr := b.Lookup(lo); len(fr) == 0 || fr[0].Function != "geo::Box<double>::total" {
		t.Errorf("Lookup(%#x) = %+v", lo, fr)
	}
}

func TestLookupGo(t *testing.T) {
	full := build(t, "goprog", "go", "build", "-C", "TESTDATA/goprog", "-o", "OUT", ".")
	stripped := build(t, "goprog-stripped", "go", "build", "-C", "TESTDATA/goprog", "-ldflags=-s -w", "-o", "OUT", ".")
	lo, hi := funcRange(t, full, "main.work")
	for _, bin := range []string{full, stripped} {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			b, err := Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			base := b.Identity().Base
			sawInline := false
			for a := lo; a < hi; a++ {
				fr := b.Lookup(a - base)
				if len(fr) == 0 || fr[0].Function != "main.work" || fr[0].FuncAddr != lo-base || !sizeOK(bin == full, fr[0].FuncSize, hi-lo) {
					t.Fatalf("Lookup(%#x) = %+v, want function at %#x size %d", a, fr, lo-base, hi-lo)
				}
				last := fr[len(fr)-1]
				if filepath.Base(last.File) != "main.go" || last.Line < 9 || last.Line > 19 {
					t.Fatalf("Lookup(%#x) = %+v", a, fr)
				}
				if len(fr) == 2 && fr[1].Function == "main.inner" && fr[0].Line == 12 {
					sawInline = true
				}
			}
			// DWARF and pclntab's inline tree both record inlining.
			if !sawInline {
				t.Error("no address in main.work shows main.inner inlined at line 12")
			}
		})
	}
}

// TestLookupGoStrippedInline: a Go binary built without symbols and DWARF
// (-ldflags=-s -w, as Go's own toolchain ships) gives, from its pclntab's
// inline tree, the frames its DWARF twin gives: at every address of every
// main.* function, the same functions, files and lines at the same inline
// depth. Linked externally (as cgo programs are), Go's code does not start
// where .text does, which the stripped binary must find out by itself.
func TestLookupGoStrippedInline(t *testing.T) {
	t.Run("internal", func(t *testing.T) {
		full := build(t, "goprog", "go", "build", "-C", "TESTDATA/goprog", "-o", "OUT", ".")
		stripped := build(t, "goprog-stripped", "go", "build", "-C", "TESTDATA/goprog", "-ldflags=-s -w", "-o", "OUT", ".")
		compareGoBuilds(t, full, stripped)
	})
	t.Run("pie", func(t *testing.T) {
		full := build(t, "goprog-pie", "go", "build", "-C", "TESTDATA/goprog", "-buildmode=pie", "-o", "OUT", ".")
		stripped := build(t, "goprog-pie-stripped", "go", "build", "-C", "TESTDATA/goprog", "-buildmode=pie", "-ldflags=-s -w", "-o", "OUT", ".")
		compareGoBuilds(t, full, stripped)
	})
	t.Run("external", func(t *testing.T) {
		full := buildOrSkip(t, "goprog-ext", "env", "CGO_ENABLED=1", "go", "build", "-C", "TESTDATA/goprog", "-ldflags=-linkmode=external", "-o", "OUT", ".")
		stripped := buildOrSkip(t, "goprog-ext-stripped", "env", "CGO_ENABLED=1", "go", "build", "-C", "TESTDATA/goprog", "-ldflags=-s -w -linkmode=external", "-o", "OUT", ".")
		compareGoBuilds(t, full, stripped)
	})
	t.Run("external-pie", func(t *testing.T) {
		full := buildOrSkip(t, "goprog-ext-pie", "env", "CGO_ENABLED=1", "go", "build", "-C", "TESTDATA/goprog", "-buildmode=pie", "-ldflags=-linkmode=external", "-o", "OUT", ".")
		stripped := buildOrSkip(t, "goprog-ext-pie-stripped", "env", "CGO_ENABLED=1", "go", "build", "-C", "TESTDATA/goprog", "-buildmode=pie", "-ldflags=-s -w -linkmode=external", "-o", "OUT", ".")
		compareGoBuilds(t, full, stripped)
	})
}

func compareGoBuilds(t *testing.T, full, stripped string) {
	fb, err := Open(full)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	sb, err := Open(stripped, NoSeparateDebug())
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if hasDWARF(sb.obj) || sb.obj.Section(".symtab") != nil {
		t.Fatal("the stripped build still has DWARF or symbols")
	}
	syms, err := fb.obj.SymbolTable()
	if err != nil {
		t.Fatal(err)
	}
	base := fb.Identity().Base
	if sb.Identity().Base != base {
		t.Fatalf("bases differ: %#x and %#x", base, sb.Identity().Base)
	}
	addrs, deepest := 0, 0
	for _, s := range syms {
		if !strings.HasPrefix(s.Name, "main.") {
			continue
		}
		for a := s.Addr; a < s.Addr+s.Size; a++ {
			want, got := fb.Lookup(a-base), sb.Lookup(a-base)
			addrs++
			deepest = max(deepest, len(want))
			if len(got) != len(want) || len(want) == 0 || got[0].FuncAddr != want[0].FuncAddr {
				t.Fatalf("%s+%#x: stripped gives %+v, DWARF gives %+v", s.Name, a-s.Addr, got, want)
			}
			for i := range want {
				w, g := want[i], got[i]
				if g.Function != w.Function || g.File != w.File || g.Line != w.Line {
					t.Fatalf("%s+%#x frame %d: stripped gives %+v, DWARF gives %+v", s.Name, a-s.Addr, i, got, want)
				}
			}
		}
	}
	t.Logf("%d addresses agree; deepest inline chain %d frames", addrs, deepest)
	if deepest < 3 {
		t.Errorf("deepest chain has %d frames, want main.deep → main.mid → main.leaf", deepest)
	}
}

// sizeOK accepts pclntab's function sizes, which run to the next function
// and so include alignment padding.
func sizeOK(exact bool, got, want uint64) bool {
	if exact {
		return got == want
	}
	return got >= want && got < want+64
}

func TestLookupSplitDebug(t *testing.T) {
	full := build(t, "prog-gdwarf-5", "gcc", "-gdwarf-5", "-O2", "-o", "OUT", "TESTDATA/prog.c")
	dir := t.TempDir()
	bin := filepath.Join(dir, "prog")
	dbg := filepath.Join(dir, "prog.debug")
	run(t, "objcopy", "--only-keep-debug", full, dbg)
	run(t, "objcopy", "--strip-all", "--add-gnu-debuglink="+dbg, full, bin)

	b, err := Open(bin, DebugRoot(""))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.DebugFile() != dbg {
		t.Fatalf("DebugFile = %q, want %q", b.DebugFile(), dbg)
	}
	compareBinary(t, b, full, false, "work", "helper", "main")

	// Moved elsewhere, the debug file is found through a symbol directory
	// by build-id layout and by name.
	for _, layout := range []string{"build-id", "name"} {
		t.Run(layout, func(t *testing.T) {
			sd := t.TempDir()
			var dst string
			if layout == "build-id" {
				h := fmt.Sprintf("%x", b.Identity().BuildID)
				dst = filepath.Join(sd, ".build-id", h[:2], h[2:]+".debug")
			} else {
				dst = filepath.Join(sd, "prog")
			}
			run(t, "mkdir", "-p", filepath.Dir(dst))
			run(t, "cp", dbg, dst)
			lone := filepath.Join(t.TempDir(), "prog")
			run(t, "cp", bin, lone)
			b2, err := Open(lone, DebugRoot(""), SymbolDirs(t.TempDir(), sd))
			if err != nil {
				t.Fatal(err)
			}
			defer b2.Close()
			if b2.DebugFile() != dst {
				t.Fatalf("DebugFile = %q, want %q", b2.DebugFile(), dst)
			}
		})
	}

	// A debuglink whose CRC does not match is refused.
	t.Run("crc", func(t *testing.T) {
		d := t.TempDir()
		run(t, "cp", bin, filepath.Join(d, "prog"))
		run(t, "cp", bin, filepath.Join(d, "prog.debug")) // wrong file, same name
		b3, err := Open(filepath.Join(d, "prog"), DebugRoot(""))
		if err != nil {
			t.Fatal(err)
		}
		defer b3.Close()
		if b3.DebugFile() != "" {
			t.Errorf("accepted %s despite its CRC", b3.DebugFile())
		}
		wantRejected(t, b3, filepath.Join(d, "prog.debug"), "CRC")
	})

	// A debug file of another build, found by name in a symbol directory,
	// is refused, and said so.
	t.Run("other build", func(t *testing.T) {
		other := build(t, "prog-other", "gcc", "-gdwarf-5", "-O1", "-o", "OUT", "TESTDATA/prog.c")
		sd := t.TempDir()
		run(t, "objcopy", "--only-keep-debug", other, filepath.Join(sd, "prog.debug"))
		lone := filepath.Join(t.TempDir(), "prog")
		run(t, "objcopy", "--strip-all", full, lone) // no debuglink: found by name only
		b4, err := Open(lone, DebugRoot(""), SymbolDirs(sd))
		if err != nil {
			t.Fatal(err)
		}
		defer b4.Close()
		if b4.DebugFile() != "" {
			t.Errorf("accepted %s, a debug file of another build", b4.DebugFile())
		}
		wantRejected(t, b4, filepath.Join(sd, "prog.debug"), "build-id")
	})
}

// wantRejected checks that b reports path as refused for reason.
func wantRejected(t *testing.T, b *Binary, path, reason string) {
	t.Helper()
	rej := b.RejectedDebugFiles()
	if len(rej) != 1 || !strings.Contains(rej[0], path) || !strings.Contains(rej[0], reason) || strings.Contains(rej[0], "\n") {
		t.Errorf("RejectedDebugFiles = %q, want one line about %s and its %s", rej, path, reason)
	}
}

func TestLookupSystemBinaries(t *testing.T) {
	for _, tc := range []struct{ path, sym string }{
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", "malloc"},
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", "qsort"},
		{"/usr/bin/perl", "perl_run"},
		{"/usr/bin/sqlite3", "sqlite3_prepare_v2"},
		{"/usr/lib/x86_64-linux-gnu/libsqlite3.so.0", "sqlite3_step"},
	} {
		t.Run(filepath.Base(tc.path)+"/"+tc.sym, func(t *testing.T) {
			systemFile(t, tc.path)
			b, err := Open(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			// The symbol as the file's tables list it (.dynsym, for a
			// stripped library), sized by the file, not by Lookup's
			// index.
			syms, _ := b.obj.SymbolTable()
			var want *objfile.Symbol
			for i := range syms {
				if syms[i].Name == tc.sym && syms[i].Size > 0 {
					want = &syms[i]
				}
			}
			if want == nil {
				t.Skipf("%s does not define %s", tc.path, tc.sym)
			}
			base := b.Identity().Base
			for _, a := range []uint64{want.Addr, want.Addr + want.Size/2, want.Addr + want.Size - 1} {
				fr := b.Lookup(a - base)
				if len(fr) == 0 {
					t.Fatalf("Lookup(%#x) found nothing", a)
				}
				// Aliases (malloc/__libc_malloc) share an address; any
				// name at the right start will do.
				if fr[0].FuncAddr != want.Addr-base {
					t.Errorf("Lookup(%#x) = %+v, want a function at %#x", a, fr, want.Addr-base)
				}
			}
		})
	}
}

func TestLookupPLT(t *testing.T) {
	bin := build(t, "prog-gdwarf-5", "gcc", "-gdwarf-5", "-O2", "-o", "OUT", "TESTDATA/prog.c")
	out := run(t, "objdump", "-d", "-j", ".plt.sec", "-j", ".plt", bin)
	re := regexp.MustCompile(`(?m)^([0-9a-f]+) <(\w+@plt)>:`)
	m := re.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		t.Skip("objdump lists no PLT entries")
	}
	b, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, s := range m {
		a, _ := strconv.ParseUint(s[1], 16, 64)
		fr := b.Lookup(a + 4)
		if len(fr) == 0 || fr[0].Function != s[2] {
			t.Errorf("Lookup(%#x) = %+v, want %s", a+4, fr, s[2])
		}
	}
}

func TestLookupConcurrent(t *testing.T) {
	bin := build(t, "progcc", "g++", "-g", "-O2", "-o", "OUT", "TESTDATA/prog.cc")
	b, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	lo, hi := funcRange(t, bin, "main")
	want := make([][]Frame, hi-lo)
	done := make(chan bool)
	for g := range 4 {
		go func() {
			for a := lo; a < hi; a++ {
				fr := b.Lookup(a)
				if g == 0 {
					want[a-lo] = fr
				}
			}
			done <- true
		}()
	}
	for range 4 {
		<-done
	}
	for a := lo; a < hi; a++ {
		if fmt.Sprint(b.Lookup(a)) != fmt.Sprint(want[a-lo]) {
			t.Fatalf("Lookup(%#x) changed between calls", a)
		}
	}
}

// TestLookupLinesNeverNegative sweeps a whole Go binary, stripped and not:
// Go's line table says -1 for generated code, and profile formats store
// lines unsigned, so Lookup must say 0 ("unknown") instead.
func TestLookupLinesNeverNegative(t *testing.T) {
	full := build(t, "goprog", "go", "build", "-C", "TESTDATA/goprog", "-o", "OUT", ".")
	stripped := build(t, "goprog-stripped", "go", "build", "-C", "TESTDATA/goprog", "-ldflags=-s -w", "-o", "OUT", ".")
	for _, bin := range []string{full, stripped} {
		b, err := Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		text := b.obj.Section(".text")
		base := b.Identity().Base
		for a := text.Addr; a < text.Addr+text.Size; a += 7 {
			for _, f := range b.Lookup(a - base) {
				if f.Line < 0 {
					t.Fatalf("%s: Lookup(%#x) gave line %d in %s", filepath.Base(bin), a, f.Line, f.Function)
				}
			}
		}
		b.Close()
	}
}

// TestEntryPointNamed: a stripped executable's entry point is named _start,
// and the name does not spread to the code that follows it.
func TestEntryPointNamed(t *testing.T) {
	src := build(t, "prog-entry", "gcc", "-O2", "-o", "OUT", "TESTDATA/prog.c")
	bin := filepath.Join(t.TempDir(), "stripped")
	run(t, "strip", "-o", bin, src)
	b, err := Open(bin, NoSeparateDebug())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	entry, _ := b.obj.Entry()
	base := b.Identity().Base
	if fr := b.Lookup(entry - base + 4); len(fr) == 0 || fr[0].Function != "_start" || fr[0].FuncAddr != entry-base {
		t.Errorf("Lookup(entry+4) = %+v, want _start at the entry point", fr)
	}
	if fr := b.Lookup(entry - base + entryMaxSize); len(fr) > 0 && fr[0].Function == "_start" {
		t.Errorf("_start spreads past %d bytes: %+v", entryMaxSize, fr)
	}
	// A shared library's entry point is not _start.
	lib, err := Open("/usr/lib/x86_64-linux-gnu/libc.so.6", NoSeparateDebug())
	if err != nil {
		t.Skip("no x86-64 libc here")
	}
	defer lib.Close()
	libEntry, _ := lib.obj.Entry()
	if fr := lib.Lookup(libEntry - lib.Identity().Base); len(fr) > 0 && fr[0].Function == "_start" {
		t.Errorf("libc's entry point was named _start")
	}
}
