package objfile

import "testing"

// TestPlacementNonELF places a Mach-O and a PE file the way their loaders
// map them, slid as a whole from file offset 0: relative address 0 must
// land on the image's base, so that main.main's relative address is its
// SVMA minus Identity.Base (an RVA for PE).
func TestPlacementNonELF(t *testing.T) {
	for _, tc := range []struct {
		name string
		path func(testing.TB) string
	}{
		{"macho", func(t testing.TB) string { return goDarwin(t, "arm64") }},
		{"pe", goWindows},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustOpen(t, tc.path(t))
			p := f.Placement()
			if !p.Known() {
				t.Fatal("no placement")
			}
			const start = 0x7ff000000000
			rel0 := start - p.LibOffset(start, 0)
			sym := symbolNamed(t, f, "main.main")
			abs := start + (sym.Addr - f.Identity().Base) // the loader slides the image as a whole
			if got, want := abs-rel0, sym.Addr-f.Identity().Base; got != want {
				t.Errorf("main.main at relative %#x, want %#x", got, want)
			}
		})
	}
}

// TestSectionInFile: an ELF file's .bss has an offset and a size but no
// bytes of its own in the file.
func TestSectionInFile(t *testing.T) {
	f := mustOpen(t, gccELF(t))
	if s := f.Section(".text"); s == nil || !s.InFile() {
		t.Errorf(".text %+v: want contents in the file", s)
	}
	if s := f.Section(".bss"); s != nil && s.InFile() {
		t.Errorf(".bss %+v: want no contents in the file", s)
	}
}
