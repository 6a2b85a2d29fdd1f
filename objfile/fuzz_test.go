package objfile

import (
	"bytes"
	"os"
	"testing"
)

// FuzzNewFile: damaged files give errors or partial answers, never a
// panic or an unbounded allocation.
func FuzzNewFile(f *testing.F) {
	// Seeds: the head of this test binary (ELF on Linux, Mach-O on
	// macOS, PE on Windows) and the bare magics of each format.
	if exe, err := os.Executable(); err == nil {
		if b, err := os.ReadFile(exe); err == nil {
			f.Add(b[:min(len(b), 8192)])
		}
	}
	f.Add([]byte("\x7fELF"))
	f.Add([]byte("MZ"))
	f.Add([]byte{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2})
	f.Add([]byte{0xcf, 0xfa, 0xed, 0xfe})
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := NewFile(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		file.Identity()
		file.Symbols()
		file.DataSymbols()
		file.NamedSymbols(func(n []byte) bool { return len(n) > 3 })
		file.Segments()
		file.UnwindSections()
		file.PDB()
		file.HasDWARF()
		file.EHFrameHdr()
		file.Is64()
		for _, s := range file.Sections() {
			if s.Size < 1<<20 {
				s.Data()
			}
		}
	})
}
