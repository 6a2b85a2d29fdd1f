package symbolize

import (
	"debug/elf"
	"encoding/binary"

	"github.com/gprof-dev/gprof/objfile"
)

// The identity of ELF files is computed in objfile, the one place that
// parses object files; these wrappers keep this package's API for its
// callers.

// BreakpadID converts an identifier (a build-id or a text hash) to the
// 33-character debug ID symbol servers use; see objfile.BreakpadID.
func BreakpadID(id []byte, littleEndian bool) string {
	return objfile.BreakpadID(id, littleEndian)
}

// BuildIDFromNotes returns the GNU build-id in a block of ELF notes; see
// objfile.BuildIDFromNotes.
func BuildIDFromNotes(notes []byte, order binary.ByteOrder, align uint64) []byte {
	return objfile.BuildIDFromNotes(notes, order, align)
}

// FileBuildID returns f's GNU build-id; see objfile.ELFBuildID.
func FileBuildID(f *elf.File) []byte { return objfile.ELFBuildID(f) }

// LoadSegments returns the headers of f's PT_LOAD segments in file order.
func LoadSegments(f *elf.File) []elf.ProgHeader { return objfile.ELFLoadSegments(f) }

// LibOffset returns the Offset of a format.Lib for a mapping that starts at
// address start and maps the file from fileOffset; see objfile.ELFLibOffset.
func LibOffset(start, fileOffset uint64, typ elf.Type, loads []elf.ProgHeader) uint64 {
	return objfile.ELFLibOffset(start, fileOffset, typ, loads)
}

// LibOffset is the package-level LibOffset for this binary.
func (b *Binary) LibOffset(start, fileOffset uint64) uint64 {
	return LibOffset(start, fileOffset, b.elf.Type, LoadSegments(b.elf))
}
