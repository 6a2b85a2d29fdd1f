package symbolize

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/objfile"
)

// The programs come from objfile's testdata, which its own tests build too.
const objTestdata = "TESTDATA/../../objfile/testdata"

func goDarwinArm64(t *testing.T) string {
	return build(t, "hello-darwin-arm64", "env", "GOOS=darwin", "GOARCH=arm64",
		"go", "build", "-o", "OUT", objTestdata+"/hello/main.go")
}

func goWindowsAmd64(t *testing.T) string {
	return build(t, "hello-windows.exe", "env", "GOOS=windows", "GOARCH=amd64",
		"go", "build", "-o", "OUT", objTestdata+"/hello/main.go")
}

// llvmTool returns an LLVM tool's path, versioned or not, or skips.
func llvmTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if m, _ := filepath.Glob("/usr/bin/" + name + "-[0-9]*"); len(m) > 0 {
		return m[len(m)-1]
	}
	t.Skipf("%s not installed (Debian: llvm)", name)
	return ""
}

// symbolizerFrames runs llvm-symbolizer --inlines on SVMAs and returns,
// per address, "function:line" innermost first.
func symbolizerFrames(t *testing.T, path string, svmas []uint64) [][]string {
	t.Helper()
	args := []string{"--inlines", "--functions=linkage", "--obj=" + path}
	for _, a := range svmas {
		args = append(args, fmt.Sprintf("%#x", a))
	}
	out, err := exec.Command(llvmTool(t, "llvm-symbolizer"), args...).Output()
	if err != nil {
		t.Fatalf("llvm-symbolizer: %v", err)
	}
	var res [][]string
	for _, block := range strings.Split(strings.TrimSpace(string(out)), "\n\n") {
		lines := strings.Split(block, "\n")
		var frames []string
		for i := 0; i+1 < len(lines); i += 2 {
			loc := strings.Split(lines[i+1], ":")
			line := "0"
			if len(loc) >= 2 {
				line = loc[len(loc)-2]
			}
			frames = append(frames, lines[i]+":"+line)
		}
		res = append(res, frames)
	}
	if len(res) != len(svmas) {
		t.Fatalf("llvm-symbolizer answered %d addresses of %d", len(res), len(svmas))
	}
	return res
}

func ourFrames(fr []Frame) []string {
	var s []string
	for i := len(fr) - 1; i >= 0; i-- {
		s = append(s, fr[i].Function+":"+strconv.Itoa(fr[i].Line))
	}
	return s
}

// checkAgainstSymbolizer looks up every instruction-aligned address of the
// named functions and compares names, inline chains and lines with
// llvm-symbolizer's, an independent DWARF reader. It returns how many
// addresses had inline frames.
func checkAgainstSymbolizer(t *testing.T, path string, step uint64, funcs ...string) int {
	t.Helper()
	o, err := OpenObject(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	base := o.File().Identity().Base
	syms, err := o.File().Symbols()
	if err != nil {
		t.Fatal(err)
	}
	inlined := 0
	for _, name := range funcs {
		var sym *objfile.Symbol
		for i := range syms {
			if syms[i].Name == name {
				sym = &syms[i]
			}
		}
		if sym == nil {
			t.Fatalf("%s: no symbol %s", path, name)
		}
		var svmas []uint64
		for a := sym.Addr; a < sym.Addr+sym.Size; a += step {
			svmas = append(svmas, a)
		}
		want := symbolizerFrames(t, path, svmas)
		for i, a := range svmas {
			got := o.Lookup(a - base)
			if len(got) == 0 || got[0].Function != name || got[0].FuncAddr != sym.Addr-base {
				t.Errorf("%#x: outer frame %+v, want %s at %#x", a-base, got, name, sym.Addr-base)
				continue
			}
			if g, w := strings.Join(ourFrames(got), " < "), strings.Join(want[i], " < "); g != w {
				t.Errorf("%s+%#x: frames %s; llvm-symbolizer: %s", name, a-sym.Addr, g, w)
			}
			if len(got) > 1 {
				inlined++
			}
		}
	}
	return inlined
}

func TestObjectLookupMinGW(t *testing.T) {
	path := build(t, "inline-mingw.exe", "x86_64-w64-mingw32-gcc", "-g", "-O2", "-Wl,--build-id",
		"-o", "OUT", objTestdata+"/inline.c")
	if n := checkAgainstSymbolizer(t, path, 1, "main", "work", "exported"); n == 0 {
		t.Error("no address in work had sq inlined")
	}
}

func TestObjectLookupClangMachO(t *testing.T) {
	path := build(t, "inline-arm64.o", "clang", "--target=arm64-apple-macos", "-g", "-O2", "-c",
		"-o", "OUT", objTestdata+"/inline.c")
	if n := checkAgainstSymbolizer(t, path, 4, "main", "work"); n == 0 {
		t.Error("no address in work had sq inlined")
	}
}

func TestObjectLookupGo(t *testing.T) {
	// LLVM 14 cannot read the compressed DWARF Go writes on darwin, so
	// there Go's own addr2line, which reads pclntab, is the reference.
	t.Run("darwin", func(t *testing.T) { checkAgainstGoAddr2line(t, goDarwinArm64(t), 4, "main.main", "main.work") })
	t.Run("windows", func(t *testing.T) { checkAgainstSymbolizer(t, goWindowsAmd64(t), 1, "main.main", "main.work") })
}

// checkAgainstGoAddr2line compares, at every instruction of the named
// functions, the outer function and the innermost file:line with go tool
// addr2line's.
func checkAgainstGoAddr2line(t *testing.T, path string, step uint64, funcs ...string) {
	t.Helper()
	o, err := OpenObject(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	base := o.File().Identity().Base
	syms, _ := o.File().Symbols()
	var svmas []uint64
	for _, s := range syms {
		for _, name := range funcs {
			if s.Name == name {
				for a := s.Addr; a < s.Addr+s.Size; a += step {
					svmas = append(svmas, a)
				}
			}
		}
	}
	if len(svmas) == 0 {
		t.Fatalf("%s: none of %v found", path, funcs)
	}
	var in strings.Builder
	for _, a := range svmas {
		fmt.Fprintf(&in, "%#x\n", a)
	}
	cmd := exec.Command("go", "tool", "addr2line", path)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool addr2line: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2*len(svmas) {
		t.Fatalf("go tool addr2line answered %d lines for %d addresses", len(lines), len(svmas))
	}
	for i, a := range svmas {
		fr := o.Lookup(a - base)
		if len(fr) == 0 {
			t.Errorf("%#x: nothing found", a-base)
			continue
		}
		inner := fr[len(fr)-1]
		got := fmt.Sprintf("%s %s:%d", fr[0].Function, inner.File, inner.Line)
		if want := lines[2*i] + " " + lines[2*i+1]; got != want {
			t.Errorf("%#x: %s; go tool addr2line: %s", a-base, got, want)
		}
	}
}

// TestObjectDSYM checks that a Mach-O binary without DWARF gets its lines
// from a .dSYM bundle with its UUID in a symbol directory.
func TestObjectDSYM(t *testing.T) {
	strip := llvmTool(t, "llvm-strip")
	src := goDarwinArm64(t)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "hello")
	os.WriteFile(bin, data, 0o755)
	if out, err := exec.Command(strip, "--strip-debug", bin).CombinedOutput(); err != nil {
		t.Fatalf("llvm-strip: %v\n%s", err, out)
	}
	symDir := t.TempDir()
	dwarfFile := filepath.Join(symDir, "hello.dSYM", "Contents", "Resources", "DWARF", "hello")
	os.MkdirAll(filepath.Dir(dwarfFile), 0o755)
	os.WriteFile(dwarfFile, data, 0o644)

	lookupMain := func(opts ...Option) (Frame, string) {
		o, err := OpenObject(bin, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		id := o.File().Identity()
		var addr uint64
		syms, _ := o.File().Symbols()
		for _, s := range syms {
			if s.Name == "main.main" {
				addr = s.Addr - id.Base
			}
		}
		fr := o.Lookup(addr + 4)
		if len(fr) == 0 {
			t.Fatal("main.main not found")
		}
		return fr[len(fr)-1], o.DebugFile()
	}
	// Without the bundle only the symbol table (and pclntab) answer.
	if _, df := lookupMain(); df != "" {
		t.Errorf("debug file %s without a symbol dir", df)
	}
	fr, df := lookupMain(SymbolDirs(symDir))
	if df != dwarfFile {
		t.Errorf("debug file %q, want %s", df, dwarfFile)
	}
	if fr.Function != "main.main" || !strings.HasSuffix(fr.File, "hello/main.go") || fr.Line == 0 {
		t.Errorf("main.main+4 via the dSYM: %+v", fr)
	}
}
