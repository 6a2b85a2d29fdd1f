package symbolize

import (
	"encoding/binary"

	"github.com/gprof-dev/gprof/objfile"
)

// The identity of object files is computed in objfile, the one place that
// parses them; these wrappers keep this package's API for its callers.

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

// LibOffset returns the Offset of a profile.Lib for a mapping of this binary
// that starts at address start and maps the file from fileOffset; see
// objfile.ELFLibOffset.
func (b *Binary) LibOffset(start, fileOffset uint64) uint64 {
	return b.obj.Placement().LibOffset(start, fileOffset)
}
