//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/symbolize"
)

// Tests of gprof inspect on real Mach-O, PE and ELF files, built at test
// time by the toolchains that write them, with identities checked against
// LLVM's and MinGW's own readers.

type inspectJSON struct {
	Version    int    `json:"version"`
	Format     string `json:"format"`
	Arch       string `json:"arch"`
	DebugName  string `json:"debug_name"`
	BreakpadID string `json:"breakpad_id"`
	CodeID     string `json:"code_id"`
	Base       string `json:"base"`
	Symbols    int    `json:"symbols"`
	DWARF      bool   `json:"dwarf"`
	DebugFile  string `json:"debug_file"`
	Addresses  []struct {
		Address string `json:"address"`
		Frames  []struct {
			Function string `json:"function"`
			File     string `json:"file"`
			Line     int    `json:"line"`
			Inlined  bool   `json:"inlined"`
		} `json:"frames"`
	} `json:"addresses"`
}

func inspectFile(t *testing.T, args ...string) inspectJSON {
	t.Helper()
	r := gprof(t, append([]string{"inspect", "--json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("gprof inspect %v: exit %d: %s", args, r.code, r.stderr)
	}
	var out inspectJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, r.stdout)
	}
	if out.Version != 1 {
		t.Errorf("schema version %d, want 1", out.Version)
	}
	return out
}

// crossBuild builds a program of testdata or objfile/testdata with a
// foreign toolchain, skipping when it is missing. It runs in the
// repository's root: paths in args are from there.
func crossBuild(t *testing.T, name string, env []string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(args[0]); err != nil {
		t.Skipf("%s not installed (.ci/run installs it)", args[0])
	}
	out := filepath.Join(fixtures, name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "OUT", out)
	}
	cmd := rootCommand(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out
}

// llvm returns an LLVM tool, versioned or not, or skips.
func llvm(t *testing.T, name string) string {
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

func output(t *testing.T, args ...string) string {
	t.Helper()
	b, err := exec.Command(args[0], args[1:]...).Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return string(b)
}

// nmAddress returns the address nm-like tool gives symbol name.
func nmAddress(t *testing.T, nm, path, name string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^([0-9a-f]+) [Tt] ` + regexp.QuoteMeta(name) + `$`).FindStringSubmatch(output(t, nm, path))
	if m == nil {
		t.Fatalf("%s lists no %s in %s", nm, name, path)
	}
	v, _ := strconv.ParseUint(m[1], 16, 64)
	return v
}

func hexBase(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("base %q: %v", s, err)
	}
	return v
}

func TestInspectMachO(t *testing.T) {
	for _, arch := range []string{"arm64", "amd64"} {
		t.Run(arch, func(t *testing.T) {
			bin := crossBuild(t, "hello-darwin-"+arch, []string{"GOOS=darwin", "GOARCH=" + arch, "CGO_ENABLED=0"},
				"go", "build", "-o", "OUT", "./objfile/testdata/hello")
			// The identity alone, then with main.main's address.
			id := inspectFile(t, bin)
			m := regexp.MustCompile(`UUID: ([0-9A-F-]+) `).FindStringSubmatch(output(t, llvm(t, "llvm-dwarfdump"), "--uuid", bin))
			if m == nil {
				t.Fatal("llvm-dwarfdump --uuid found no UUID")
			}
			uuid := strings.ReplaceAll(m[1], "-", "")
			if id.Format != "macho" || id.BreakpadID != uuid+"0" || id.CodeID != uuid || !id.DWARF {
				t.Errorf("identity %+v; llvm-dwarfdump says UUID %s", id, uuid)
			}
			base := hexBase(t, id.Base)
			addr := nmAddress(t, llvm(t, "llvm-nm"), bin, "_main.main") - base
			got := inspectFile(t, bin, fmt.Sprintf("%x", addr))
			fr := got.Addresses[0].Frames
			if len(fr) == 0 || fr[0].Function != "main.main" || !strings.HasSuffix(fr[len(fr)-1].File, "hello/main.go") {
				t.Errorf("main.main at %#x: %+v", addr, fr)
			}
		})
	}
}

func TestInspectPE(t *testing.T) {
	t.Run("mingw", func(t *testing.T) {
		exe := crossBuild(t, "inline-mingw.exe", nil, "x86_64-w64-mingw32-gcc", "-g", "-O2", "-Wl,--build-id",
			"-o", "OUT", "objfile/testdata/inline.c")
		id := inspectFile(t, exe)
		m := regexp.MustCompile(`format RSDS signature ([0-9a-f]{32}) age (\d+)`).
			FindStringSubmatch(output(t, "x86_64-w64-mingw32-objdump", "-p", exe))
		if m == nil {
			t.Fatal("objdump -p shows no RSDS record")
		}
		age, _ := strconv.ParseUint(m[2], 10, 32)
		if want := strings.ToUpper(m[1]) + strconv.FormatUint(age, 16); id.BreakpadID != want {
			t.Errorf("breakpad ID %s; objdump -p gives %s", id.BreakpadID, want)
		}
		hdr := output(t, llvm(t, "llvm-readobj"), "--file-headers", exe)
		field := func(name string) uint64 {
			m := regexp.MustCompile(`(?m)^\s*` + name + `: .*?(0x[0-9A-Fa-f]+|\d+)\)?$`).FindStringSubmatch(hdr)
			if m == nil {
				t.Fatalf("llvm-readobj shows no %s", name)
			}
			v, _ := strconv.ParseUint(m[1], 0, 64)
			return v
		}
		if want := fmt.Sprintf("%08X%x", field("TimeDateStamp"), field("SizeOfImage")); id.CodeID != want {
			t.Errorf("code ID %s; llvm-readobj gives %s", id.CodeID, want)
		}
		base := field("ImageBase")
		if hexBase(t, id.Base) != base {
			t.Errorf("base %s; ImageBase %#x", id.Base, base)
		}
		// main by its RVA, and an address in work where sq is inlined,
		// found by llvm-dwarfdump.
		mainRVA := nmAddress(t, "x86_64-w64-mingw32-nm", exe, "main") - base
		dd := output(t, llvm(t, "llvm-dwarfdump"), "--debug-info", exe)
		im := regexp.MustCompile(`DW_TAG_inlined_subroutine\s+DW_AT_abstract_origin\s+\(0x[0-9a-f]+ "sq"\)(?:\s+DW_AT_\w+\s+\([^)]*\))*?\s+DW_AT_low_pc\s+\((0x[0-9a-f]+)\)`).FindStringSubmatch(dd)
		if im == nil {
			t.Fatal("llvm-dwarfdump shows no inlined sq with a low_pc")
		}
		sqVA, _ := strconv.ParseUint(im[1], 0, 64)
		got := inspectFile(t, exe, fmt.Sprintf("0x%x", mainRVA), fmt.Sprintf("%x", sqVA-base))
		if fr := got.Addresses[0].Frames; len(fr) == 0 || fr[0].Function != "main" || !strings.HasSuffix(fr[0].File, "inline.c") {
			t.Errorf("main at %#x: %+v", mainRVA, fr)
		}
		fr := got.Addresses[1].Frames
		if len(fr) != 2 || fr[0].Function != "work" || fr[1].Function != "sq" || !fr[1].Inlined || fr[0].Inlined {
			t.Errorf("inlined sq at %#x: %+v, want work then sq (inlined)", sqVA-base, fr)
		}
	})
	t.Run("go", func(t *testing.T) {
		exe := crossBuild(t, "hello-windows.exe", []string{"GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0"},
			"go", "build", "-o", "OUT", "./objfile/testdata/hello")
		id := inspectFile(t, exe)
		if id.Format != "pe" || id.BreakpadID != "" || id.DebugName != "hello-windows.exe" || !id.DWARF {
			t.Errorf("identity %+v: want a PE without CodeView, named by its file, with DWARF", id)
		}
		rva := nmAddress(t, llvm(t, "llvm-nm"), exe, "main.main") - hexBase(t, id.Base)
		got := inspectFile(t, exe, fmt.Sprintf("%x", rva))
		if fr := got.Addresses[0].Frames; len(fr) == 0 || fr[0].Function != "main.main" {
			t.Errorf("main.main at %#x: %+v", rva, fr)
		}
	})
}

// TestInspectELF: the ELF identity is the one the recorder writes into
// profiles (symbolize's), and the build-id is readelf's.
func TestInspectELF(t *testing.T) {
	bin := buildC(t, "split")
	id := inspectFile(t, bin)
	b, err := symbolize.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	want := b.Identity()
	if id.BreakpadID != want.BreakpadID || id.CodeID != want.CodeID || id.Arch != want.Arch || hexBase(t, id.Base) != want.Base {
		t.Errorf("inspect says %+v; symbolize says %+v", id, want)
	}
	if got := fmt.Sprintf("%x", readelfBuildID(t, bin)); got != id.CodeID {
		t.Errorf("code ID %s; readelf -n gives %s", id.CodeID, got)
	}
	addr := nmAddress(t, "nm", bin, "main") - want.Base
	got := inspectFile(t, bin, fmt.Sprintf("%x", addr))
	if fr := got.Addresses[0].Frames; len(fr) == 0 || fr[0].Function != "main" {
		t.Errorf("main at %#x: %+v", addr, fr)
	}
	// The text form names the same things.
	r := gprof(t, "inspect", bin, fmt.Sprintf("%x", addr))
	for _, s := range []string{"breakpad id:  " + want.BreakpadID, "code id:      " + want.CodeID, "\n  main  "} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("text output lacks %q:\n%s", s, r.stdout)
		}
	}
}

func TestInspectErrors(t *testing.T) {
	notObj := filepath.Join(t.TempDir(), "script")
	os.WriteFile(notObj, []byte("#!/bin/sh\n"), 0o755)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"inspect"}, 2, "needs a FILE"},
		{[]string{"inspect", gprofBin, "zz"}, 2, "not hexadecimal"},
		{[]string{"inspect", notObj}, 1, `expected a program, shared library or object file (ELF, Mach-O or PE) or a PDB, found a text file starting "#!/bin/sh"`},
		{[]string{"inspect", filepath.Join(t.TempDir(), "missing")}, 1, "no such file"},
	} {
		r := gprof(t, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", c.args, r.code, r.stderr, c.code, c.msg)
		}
	}
}

// TestInspectELFDebugFile: for a stripped ELF file, inspect names the
// separate debug file found by build-id in --symbol-dir and resolves lines
// from it.
func TestInspectELFDebugFile(t *testing.T) {
	for _, tool := range []string{"objcopy", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (Debian: binutils)", tool)
		}
	}
	src := buildC(t, "split")
	dir := t.TempDir()
	bin := filepath.Join(dir, "split")
	copyFile(t, src, bin)
	bid := fmt.Sprintf("%x", readelfBuildID(t, src))
	symDir := t.TempDir()
	dbg := filepath.Join(symDir, ".build-id", bid[:2], bid[2:]+".debug")
	os.MkdirAll(filepath.Dir(dbg), 0o755)
	if out, err := exec.Command("objcopy", "--only-keep-debug", src, dbg).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	if out, err := exec.Command("strip", "--strip-debug", bin).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v\n%s", err, out)
	}
	id := inspectFile(t, bin)
	if id.DWARF || id.DebugFile != "" {
		t.Errorf("without --symbol-dir: dwarf %v, debug file %q", id.DWARF, id.DebugFile)
	}
	addr := nmAddress(t, "nm", bin, "main") - hexBase(t, id.Base)
	got := inspectFile(t, "--symbol-dir", symDir, bin, fmt.Sprintf("%x", addr))
	if !got.DWARF || got.DebugFile != dbg {
		t.Errorf("with --symbol-dir: dwarf %v, debug file %q, want %s", got.DWARF, got.DebugFile, dbg)
	}
	if fr := got.Addresses[0].Frames; len(fr) == 0 || fr[0].Function != "main" || !strings.HasSuffix(fr[0].File, "split.c") || fr[0].Line == 0 {
		t.Errorf("main at %#x: %+v, want split.c and a line", addr, fr)
	}
}

// TestInspectFat: --arch picks a fat file's slice; each slice has its own
// UUID, as llvm-dwarfdump reads them.
func TestInspectFat(t *testing.T) {
	lipo := llvm(t, "llvm-lipo")
	var thin []string
	for _, arch := range []string{"amd64", "arm64"} {
		thin = append(thin, crossBuild(t, "hello-darwin-"+arch, []string{"GOOS=darwin", "GOARCH=" + arch, "CGO_ENABLED=0"},
			"go", "build", "-o", "OUT", "./objfile/testdata/hello"))
	}
	fat := filepath.Join(t.TempDir(), "hello")
	output(t, lipo, "-create", "-output", fat, thin[0], thin[1])
	uuids := map[string]string{}
	for _, m := range regexp.MustCompile(`UUID: ([0-9A-F-]+) \((\w+)\)`).FindAllStringSubmatch(output(t, llvm(t, "llvm-dwarfdump"), "--uuid", fat), -1) {
		uuids[m[2]] = strings.ReplaceAll(m[1], "-", "")
	}
	if len(uuids) != 2 {
		t.Fatalf("llvm-dwarfdump found %v", uuids)
	}
	for _, arch := range []string{"x86_64", "arm64"} {
		id := inspectFile(t, "--arch", arch, fat)
		if id.Arch != arch || id.BreakpadID != uuids[arch]+"0" {
			t.Errorf("--arch %s: %s %s; llvm-dwarfdump says %s", arch, id.Arch, id.BreakpadID, uuids[arch])
		}
	}
	r := gprof(t, "inspect", "--arch", "ppc", fat)
	if r.code != 1 || !strings.Contains(r.stderr, "no ppc slice (slices: x86_64, arm64)") {
		t.Errorf("missing slice: exit %d, %q", r.code, r.stderr)
	}
}
