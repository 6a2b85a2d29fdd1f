package objfile

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// readobjField returns the value llvm-readobj prints after "name:" in out.
func readobjField(t *testing.T, out, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*` + name + `: (.*)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("llvm-readobj printed no %s:\n%s", name, out)
	}
	return strings.TrimSpace(m[1])
}

// parseNum reads llvm-readobj's numbers: 0x-prefixed hex, decimal, or
// "date (0x...)".
func parseNum(t *testing.T, s string) uint64 {
	t.Helper()
	if i := strings.LastIndex(s, "(0x"); i >= 0 {
		s = strings.TrimSuffix(s[i+1:], ")")
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

// dwarfdumpUUIDs returns llvm-dwarfdump --uuid's UUIDs by arch, as
// uppercase hex without dashes.
func dwarfdumpUUIDs(t *testing.T, path string) map[string]string {
	t.Helper()
	dd := tool("llvm-dwarfdump")
	if dd == "" {
		return nil
	}
	out := run(t, dd, "--uuid", path)
	ids := map[string]string{}
	for _, m := range regexp.MustCompile(`UUID: ([0-9A-F-]+) \((\w+)\)`).FindAllStringSubmatch(out, -1) {
		ids[m[2]] = strings.ReplaceAll(m[1], "-", "")
	}
	return ids
}

// nmAddr returns the address llvm-nm gives name in path.
func nmAddr(t *testing.T, path, name string) (uint64, bool) {
	t.Helper()
	nm := tool("llvm-nm")
	if nm == "" {
		return 0, false
	}
	for _, line := range strings.Split(run(t, nm, path), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == name {
			v, err := strconv.ParseUint(f[0], 16, 64)
			if err == nil {
				return v, true
			}
		}
	}
	t.Fatalf("llvm-nm lists no %s in %s", name, path)
	return 0, false
}

func TestMachOGoIdentity(t *testing.T) {
	for _, arch := range []string{"arm64", "amd64"} {
		t.Run(arch, func(t *testing.T) {
			path := goDarwin(t, arch)
			f := mustOpen(t, path)
			id := f.Identity()
			wantArch := map[string]string{"arm64": "arm64", "amd64": "x86_64"}[arch]
			if id.Format != MachO || id.Arch != wantArch {
				t.Fatalf("format %v arch %q, want macho %q", id.Format, id.Arch, wantArch)
			}
			if len(id.BuildID) != 16 {
				t.Fatalf("UUID %x: want 16 bytes", id.BuildID)
			}
			uuid := fmt.Sprintf("%X", id.BuildID)
			if id.CodeID != uuid || id.BreakpadID != uuid+"0" {
				t.Errorf("code ID %q, breakpad ID %q; want %s and %s0", id.CodeID, id.BreakpadID, uuid, uuid)
			}
			if id.DebugName != filepath.Base(path) || id.DebugPath != path {
				t.Errorf("debug name %q path %q; want the binary's", id.DebugName, id.DebugPath)
			}
			if ids := dwarfdumpUUIDs(t, path); ids != nil && ids[wantArch] != uuid {
				t.Errorf("llvm-dwarfdump --uuid says %v; we say %s", ids, uuid)
			}
			if ro := tool("llvm-readobj"); ro != "" {
				out := run(t, ro, "--macho-segment", path)
				i := strings.Index(out, "Name: __TEXT\n")
				if i < 0 {
					t.Fatalf("llvm-readobj shows no __TEXT segment")
				}
				if v := parseNum(t, readobjField(t, out[i:], "vmaddr")); v != id.Base {
					t.Errorf("base %#x; llvm-readobj gives __TEXT vmaddr %#x", id.Base, v)
				}
			}
			s := symbolNamed(t, f, "main.main")
			if s.Size == 0 || s.Addr < id.Base {
				t.Errorf("main.main at %#x size %d: want a sized symbol above the base %#x", s.Addr, s.Size, id.Base)
			}
			if want, ok := nmAddr(t, path, "_main.main"); ok && want != s.Addr {
				t.Errorf("main.main at %#x; llvm-nm says %#x", s.Addr, want)
			}
			if !f.HasDWARF() {
				t.Fatal("no DWARF found in a Go darwin binary")
			}
			if _, err := f.DWARF(); err != nil {
				t.Fatal(err)
			}
			// Go compresses its DWARF on darwin; the unwinder asks for
			// .debug_frame and gets it decompressed.
			df := f.Section(".debug_frame")
			if df == nil {
				t.Fatal("no .debug_frame (nor __zdebug_frame)")
			}
			if !df.Compressed {
				t.Errorf("%s not marked compressed", df.Name)
			}
			b, err := df.Data()
			if err != nil {
				t.Fatal(err)
			}
			if len(b) < 16 || bytes.HasPrefix(b, []byte("ZLIB")) {
				t.Errorf(".debug_frame from %s: %d bytes starting %q, want decompressed CFI", df.Name, len(b), b[:min(len(b), 4)])
			}
			if f.Section(".gopclntab") == nil || f.Section(".text") == nil {
				t.Error("no __gopclntab or __text via the ELF names")
			}
		})
	}
}

func TestMachOFat(t *testing.T) {
	lipo := tool("llvm-lipo")
	if lipo == "" {
		t.Skip("llvm-lipo not installed (Debian: llvm)")
	}
	arm, amd := goDarwin(t, "arm64"), goDarwin(t, "amd64")
	fat := filepath.Join(t.TempDir(), "hello-fat")
	run(t, lipo, "-create", "-output", fat, amd, arm)
	armID, amdID := mustOpen(t, arm).Identity(), mustOpen(t, amd).Identity()

	f := mustOpen(t, fat, Arch("x86_64"))
	if got := f.Identity(); got.BreakpadID != amdID.BreakpadID || got.Arch != "x86_64" {
		t.Errorf("--arch x86_64 slice: %s %s, want %s", got.Arch, got.BreakpadID, amdID.BreakpadID)
	}
	if got := strings.Join(f.Arches(), ","); got != "x86_64,arm64" {
		t.Errorf("slices %s, want x86_64,arm64", got)
	}
	f = mustOpen(t, fat, UUID(armID.BuildID))
	if got := f.Identity(); got.BreakpadID != armID.BreakpadID {
		t.Errorf("slice by UUID: %s, want %s", got.BreakpadID, armID.BreakpadID)
	}
	// Without a choice, the host's slice.
	f = mustOpen(t, fat)
	want := map[string]string{"arm64": armID.BreakpadID, "amd64": amdID.BreakpadID}[runtime.GOARCH]
	if want != "" && f.Identity().BreakpadID != want {
		t.Errorf("default slice %s, want the host's %s", f.Identity().BreakpadID, want)
	}
	if _, err := Open(fat, Arch("ppc")); err == nil || !strings.Contains(err.Error(), "x86_64, arm64") {
		t.Errorf("missing slice: error %v, want one listing the slices", err)
	}
	if _, err := Open(arm, UUID(amdID.BuildID)); err == nil {
		t.Error("thin file with another UUID opened")
	}
}

func TestMachOClangObject(t *testing.T) {
	path := clangMachO(t)
	f := mustOpen(t, path)
	id := f.Identity()
	if id.Format != MachO || id.Arch != "arm64" || !f.Relocatable() {
		t.Fatalf("format %v arch %s relocatable %v; want a relocatable arm64 Mach-O", id.Format, id.Arch, f.Relocatable())
	}
	// Objects have no LC_UUID: no ID rather than a made-up one.
	if id.BreakpadID != "" || id.CodeID != "" {
		t.Errorf("IDs %q %q for an object without LC_UUID", id.BreakpadID, id.CodeID)
	}
	if ids := dwarfdumpUUIDs(t, path); len(ids) != 0 {
		t.Errorf("llvm-dwarfdump finds UUIDs %v we did not", ids)
	}
	main := symbolNamed(t, f, "main")
	work := symbolNamed(t, f, "work")
	if want, ok := nmAddr(t, path, "_main"); ok && main.Addr != want {
		t.Errorf("main at %#x; llvm-nm says %#x", main.Addr, want)
	}
	if work.Size == 0 || main.Size == 0 {
		t.Errorf("unsized symbols: work %+v main %+v", work, main)
	}
	if !f.HasDWARF() {
		t.Error("clang -g object without DWARF")
	}
	if got := strings.Join(f.UnwindSections(), ","); got != "__compact_unwind" {
		t.Errorf("unwind sections %q, want __compact_unwind", got)
	}
}

func TestPEMinGW(t *testing.T) {
	path := mingw(t)
	f := mustOpen(t, path)
	id := f.Identity()
	if id.Format != PE || id.Arch != "x86_64" {
		t.Fatalf("format %v arch %s", id.Format, id.Arch)
	}
	info, ok := f.PDB()
	if !ok {
		t.Fatal("no CodeView record in a MinGW --build-id file")
	}
	// A record without a PDB path: the file goes by its own name.
	if info.Path != "" || id.DebugName != filepath.Base(path) {
		t.Errorf("PDB path %q, debug name %q", info.Path, id.DebugName)
	}
	if len(id.BreakpadID) != 33 {
		t.Errorf("breakpad ID %q: want 32 hex digits and age 1", id.BreakpadID)
	}
	if od := tool("x86_64-w64-mingw32-objdump"); od != "" {
		m := regexp.MustCompile(`format RSDS signature ([0-9a-f]{32}) age (\d+)`).FindStringSubmatch(run(t, od, "-p", path))
		if m == nil {
			t.Fatal("objdump -p shows no RSDS record")
		}
		age, _ := strconv.ParseUint(m[2], 10, 32)
		// objdump prints the GUID as breakpad does: fields swapped.
		if want := strings.ToUpper(m[1]) + strconv.FormatUint(age, 16); id.BreakpadID != want {
			t.Errorf("breakpad ID %s; objdump -p gives %s", id.BreakpadID, want)
		}
	}
	if ro := tool("llvm-readobj"); ro != "" {
		out := run(t, ro, "--file-headers", "--coff-debug-directory", path)
		want := fmt.Sprintf("%08X%x", parseNum(t, readobjField(t, out, "TimeDateStamp")),
			parseNum(t, readobjField(t, out, "SizeOfImage")))
		if id.CodeID != want {
			t.Errorf("code ID %s; llvm-readobj gives %s", id.CodeID, want)
		}
		if base := parseNum(t, readobjField(t, out, "ImageBase")); base != id.Base {
			t.Errorf("base %#x; llvm-readobj gives ImageBase %#x", id.Base, base)
		}
		if age := parseNum(t, readobjField(t, out, "PDBAge")); uint32(age) != info.Age {
			t.Errorf("age %d; llvm-readobj gives %d", info.Age, age)
		}
	}
	// COFF symbols and the export table both name functions.
	main, exp := symbolNamed(t, f, "main"), symbolNamed(t, f, "exported")
	if od := tool("x86_64-w64-mingw32-nm"); od != "" {
		for _, s := range []Symbol{main, exp} {
			re := regexp.MustCompile(`(?m)^([0-9a-f]+) T ` + s.Name + `$`)
			m := re.FindStringSubmatch(run(t, od, path))
			if m == nil {
				t.Fatalf("nm lists no %s", s.Name)
			}
			if v, _ := strconv.ParseUint(m[1], 16, 64); v != s.Addr {
				t.Errorf("%s at %#x; nm says %#x", s.Name, s.Addr, v)
			}
		}
	}
	exports, err := f.peExports()
	if err != nil || len(exports) != 1 || exports[0].Name != "exported" || exports[0].Addr != exp.Addr {
		t.Errorf("exports %+v (%v), want exported at %#x", exports, err, exp.Addr)
	}
	if !f.HasDWARF() {
		t.Error("no DWARF in a MinGW -g file")
	}
	if got := strings.Join(f.UnwindSections(), ","); !strings.Contains(got, ".pdata") {
		t.Errorf("unwind sections %q, want .pdata among them", got)
	}
}

// TestPEExceptionTable: the exception table (.pdata) of a MinGW x64 file
// is where llvm-readobj finds it, and the mapped sections hold it by RVA,
// as the unwinder reads it.
func TestPEExceptionTable(t *testing.T) {
	path := mingw(t)
	f := mustOpen(t, path)
	rva, size, ok := f.PEExceptionTable()
	pdata := f.Section(".pdata")
	if !ok || size == 0 || pdata == nil {
		t.Fatalf("exception table %#x+%#x (%v), .pdata section %v", rva, size, ok, pdata)
	}
	if ro := tool("llvm-readobj"); ro != "" {
		out := run(t, ro, "--file-headers", path)
		if r, n := parseNum(t, readobjField(t, out, "ExceptionTableRVA")), parseNum(t, readobjField(t, out, "ExceptionTableSize")); uint64(rva) != r || uint64(size) != n {
			t.Errorf("exception table %#x+%#x; llvm-readobj gives %#x+%#x", rva, size, r, n)
		}
	}
	want, err := pdata.Data()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range f.PEMappedSections() {
		if rva >= s.RVA && uint64(rva-s.RVA)+uint64(size) <= uint64(len(s.Data)) {
			found = true
			if off := uint64(rva) - (pdata.Addr - f.Identity().Base); !bytes.Equal(s.Data[rva-s.RVA:rva-s.RVA+size], want[off:off+uint64(size)]) {
				t.Error("the mapped sections' bytes at the exception table are not .pdata's")
			}
		}
	}
	if !found {
		t.Errorf("no mapped section holds the exception table %#x+%#x", rva, size)
	}
	if _, _, ok := mustOpen(t, gccELF(t)).PEExceptionTable(); ok {
		t.Error("an ELF file has a PE exception table")
	}
}

func TestPEGo(t *testing.T) {
	path := goWindows(t)
	f := mustOpen(t, path)
	id := f.Identity()
	if _, ok := f.PDB(); ok || id.BreakpadID != "" {
		t.Errorf("Go writes no CodeView record, yet breakpad ID %q", id.BreakpadID)
	}
	if id.DebugName != filepath.Base(path) {
		t.Errorf("debug name %q", id.DebugName)
	}
	if ro := tool("llvm-readobj"); ro != "" {
		out := run(t, ro, "--file-headers", path)
		want := fmt.Sprintf("%08X%x", parseNum(t, readobjField(t, out, "TimeDateStamp")),
			parseNum(t, readobjField(t, out, "SizeOfImage")))
		if id.CodeID != want {
			t.Errorf("code ID %s; llvm-readobj gives %s", id.CodeID, want)
		}
	}
	s := symbolNamed(t, f, "main.main")
	if want, ok := nmAddr(t, path, "main.main"); ok && want != s.Addr {
		t.Errorf("main.main at %#x; llvm-nm says %#x", s.Addr, want)
	}
	if !f.HasDWARF() {
		t.Error("no DWARF in a Go windows binary")
	}
}

// TestELFIdentity checks the ELF identity against readelf's build-id and
// the symbolize package's long-standing rules (covered in detail by its
// tests, which now run through objfile).
func TestELFIdentity(t *testing.T) {
	path := gccELF(t)
	f := mustOpen(t, path)
	id := f.Identity()
	if id.Format != ELF || len(id.BuildID) == 0 {
		t.Fatalf("format %v build-id %x", id.Format, id.BuildID)
	}
	if re := tool("readelf"); re != "" {
		m := regexp.MustCompile(`Build ID: ([0-9a-f]+)`).FindStringSubmatch(run(t, re, "-n", path))
		if m == nil || m[1] != id.CodeID {
			t.Errorf("code ID %s; readelf -n gives %v", id.CodeID, m)
		}
	}
	if want := BreakpadID(id.BuildID, true); id.BreakpadID != want {
		t.Errorf("breakpad ID %s, want %s", id.BreakpadID, want)
	}
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	if id.Base != elfRelativeBase(ef) || len(f.Segments()) != len(elfLoadSegments(ef)) {
		t.Errorf("base %#x, %d segments", id.Base, len(f.Segments()))
	}
	if s := symbolNamed(t, f, "main"); s.Size == 0 {
		t.Errorf("main %+v unsized", s)
	}
}

func TestFindDSYM(t *testing.T) {
	strip := tool("llvm-strip")
	if strip == "" {
		t.Skip("llvm-strip not installed (Debian: llvm)")
	}
	src := goDarwin(t, "arm64")
	dir := t.TempDir()
	bin := filepath.Join(dir, "hello")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(strip, "--strip-debug", bin).CombinedOutput(); err != nil {
		t.Fatalf("llvm-strip: %v\n%s", err, out)
	}
	f := mustOpen(t, bin)
	uuid := f.Identity().BuildID
	if f.HasDWARF() || uuid == nil {
		t.Fatalf("stripped copy: DWARF %v, UUID %x", f.HasDWARF(), uuid)
	}
	if p := FindDSYM(bin, uuid, nil); p != "" {
		t.Fatalf("found %s before any bundle exists", p)
	}
	// The bundle's DWARF file is the unstripped binary, which has the
	// same UUID, as dsymutil's output does.
	symDir := t.TempDir()
	inDir := filepath.Join(symDir, "other.dSYM", "Contents", "Resources", "DWARF", "hello")
	os.MkdirAll(filepath.Dir(inDir), 0o755)
	os.WriteFile(inDir, data, 0o644)
	if p := FindDSYM(bin, uuid, []string{symDir}); p != inDir {
		t.Errorf("in --symbol-dir: found %q, want %s", p, inDir)
	}
	next := filepath.Join(bin+".dSYM", "Contents", "Resources", "DWARF", "hello")
	os.MkdirAll(filepath.Dir(next), 0o755)
	os.WriteFile(next, data, 0o644)
	if p := FindDSYM(bin, uuid, []string{symDir}); p != next {
		t.Errorf("next to the binary: found %q, want %s", p, next)
	}
	// A bundle for another build does not count.
	other := mustOpen(t, goDarwin(t, "amd64")).Identity().BuildID
	if p := FindDSYM(bin, other, []string{symDir}); p != "" {
		t.Errorf("found %s for a UUID no bundle has", p)
	}
}

func TestNotAnObjectFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	os.WriteFile(p, []byte("#!/bin/sh\necho hi\n"), 0o644)
	if _, err := Open(p); err == nil || !strings.Contains(err.Error(), "not an ELF, Mach-O or PE file") {
		t.Errorf("error %v", err)
	}
}

// TestEHFrameHdrStripped: the unwinder finds .eh_frame_hdr through
// PT_GNU_EH_FRAME when a file's section headers are gone.
func TestEHFrameHdrStripped(t *testing.T) {
	objcopy := tool("llvm-objcopy")
	if objcopy == "" {
		t.Skip("llvm-objcopy not installed (Debian: llvm)")
	}
	path := gccELF(t)
	want := mustOpen(t, path).Section(".eh_frame_hdr")
	if want == nil {
		t.Fatal("gcc wrote no .eh_frame_hdr")
	}
	stripped := filepath.Join(t.TempDir(), "stripped")
	if out, err := exec.Command(objcopy, "--strip-sections", path, stripped).CombinedOutput(); err != nil {
		t.Fatalf("llvm-objcopy: %v\n%s", err, out)
	}
	f := mustOpen(t, stripped)
	if len(f.Sections()) != 0 {
		t.Fatalf("%d sections left after --strip-sections", len(f.Sections()))
	}
	got := f.EHFrameHdr()
	if got == nil || got.Addr != want.Addr || got.Size != want.Size {
		t.Fatalf("EHFrameHdr %+v, want at %#x size %d", got, want.Addr, want.Size)
	}
	a, err1 := got.Data()
	b, err2 := want.Data()
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Errorf("contents differ (%v, %v)", err1, err2)
	}
	// The identity survives: the build-id is found in PT_NOTE.
	if f.Identity().BreakpadID != mustOpen(t, path).Identity().BreakpadID {
		t.Errorf("breakpad ID %s after stripping sections", f.Identity().BreakpadID)
	}
	if !f.Is64() || !f.LittleEndian() {
		t.Error("x86-64 ELF not 64-bit little-endian")
	}
}
