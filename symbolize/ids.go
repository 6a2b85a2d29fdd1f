package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// BreakpadID converts an identifier (a build-id or a text hash) to the
// 33-character debug ID symbol servers use: the first 16 bytes, zero-padded
// if shorter, read as a GUID whose first three fields (u32, u16, u16) are in
// the file's byte order, printed big-endian in uppercase hex, plus age "0".
func BreakpadID(id []byte, littleEndian bool) string {
	var g [16]byte
	copy(g[:], id)
	if littleEndian {
		g[0], g[1], g[2], g[3] = g[3], g[2], g[1], g[0]
		g[4], g[5] = g[5], g[4]
		g[6], g[7] = g[7], g[6]
	}
	return fmt.Sprintf("%X0", g[:])
}

// ntGNUBuildID is NT_GNU_BUILD_ID, the note type of a GNU build-id.
const ntGNUBuildID = 3

// BuildIDFromNotes returns the GNU build-id in a block of ELF notes, such
// as the contents of a SHT_NOTE section or PT_NOTE segment, or of
// /sys/kernel/notes. align is the block's alignment (4 or 8, from sh_addralign
// or p_align; 0 means 4). It returns nil when there is no build-id note or
// the block is malformed.
func BuildIDFromNotes(notes []byte, order binary.ByteOrder, align uint64) []byte {
	if align != 8 {
		align = 4
	}
	pad := func(n uint64) uint64 { return (n + align - 1) &^ (align - 1) }
	for len(notes) >= 12 {
		namesz := uint64(order.Uint32(notes[0:]))
		descsz := uint64(order.Uint32(notes[4:]))
		typ := order.Uint32(notes[8:])
		// Offsets count from the start of the note so that 8-aligned
		// blocks (as the kernel and .note.gnu.property use) pad alike.
		descOff := pad(12 + namesz)
		if namesz > uint64(len(notes)) || descOff > uint64(len(notes)) || descsz > uint64(len(notes))-descOff {
			return nil
		}
		name := notes[12 : 12+namesz]
		desc := notes[descOff : descOff+descsz]
		if typ == ntGNUBuildID && string(name) == "GNU\x00" && descsz > 0 {
			return append([]byte(nil), desc...)
		}
		next := pad(descOff + descsz)
		if next > uint64(len(notes)) {
			return nil
		}
		notes = notes[next:]
	}
	return nil
}

// FileBuildID returns f's GNU build-id, from .note.gnu.build-id if present,
// else from any note section or PT_NOTE segment, as section headers may be
// stripped.
func FileBuildID(f *elf.File) []byte {
	if s := f.Section(".note.gnu.build-id"); s != nil && s.Type == elf.SHT_NOTE {
		if d, err := s.Data(); err == nil {
			if id := BuildIDFromNotes(d, f.ByteOrder, s.Addralign); id != nil {
				return id
			}
		}
	}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE || s.Name == ".note.gnu.build-id" {
			continue
		}
		if d, err := s.Data(); err == nil {
			if id := BuildIDFromNotes(d, f.ByteOrder, s.Addralign); id != nil {
				return id
			}
		}
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > 1<<20 {
			continue
		}
		d := make([]byte, p.Filesz)
		if _, err := p.ReadAt(d, 0); err != nil {
			continue
		}
		if id := BuildIDFromNotes(d, f.ByteOrder, p.Align); id != nil {
			return id
		}
	}
	return nil
}

// LoadSegments returns the headers of f's PT_LOAD segments in file order.
func LoadSegments(f *elf.File) []elf.ProgHeader {
	var loads []elf.ProgHeader
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			loads = append(loads, p.ProgHeader)
		}
	}
	return loads
}

// LibOffset returns the Offset of a format.Lib for a mapping that starts at
// address start and maps the file from fileOffset: the value such that
// start-offset is the address the binary's relative address 0 (the first
// PT_LOAD's vaddr) was loaded at, as samply and breakpad count. loads are
// the binary's PT_LOAD headers in file order.
//
// The file offset, not the start address, says which bytes a mapping
// holds, for every ELF type: an executable (ET_EXEC) is loaded at its link
// address, but a program may map its text again elsewhere (V8 does so with
// node's builtins), and that copy must name the same functions.
func LibOffset(start, fileOffset uint64, typ elf.Type, loads []elf.ProgHeader) uint64 {
	if len(loads) == 0 {
		return fileOffset
	}
	first := loads[0].Vaddr
	p, ok := segmentForOffset(fileOffset, loads)
	if !ok {
		if typ == elf.ET_EXEC {
			// Not a segment's bytes; an executable is not relocated.
			return start - first
		}
		// Assume the common layout where vaddr tracks file offset.
		return fileOffset - loads[0].Off
	}
	// The mapping starts at the page holding fileOffset, which may lie
	// before p.Off; unsigned wrap-around keeps the arithmetic exact.
	vaddrAtStart := p.Vaddr - p.Off + fileOffset
	return vaddrAtStart - first
}

// segmentForOffset picks the PT_LOAD a mapping at fileOffset came from. The
// kernel maps whole pages, so the mapping's offset is p.Off rounded down to
// a page; segments that share a page are told apart by preferring the one
// whose own range holds fileOffset, then the nearest following one.
func segmentForOffset(fileOffset uint64, loads []elf.ProgHeader) (elf.ProgHeader, bool) {
	for _, p := range loads {
		if p.Off <= fileOffset && fileOffset < p.Off+max(p.Filesz, 1) {
			return p, true
		}
	}
	best, found := elf.ProgHeader{}, false
	for _, p := range loads {
		align := max(p.Align, 4096)
		if p.Off&^(align-1) <= fileOffset && fileOffset < p.Off+p.Filesz {
			if !found || p.Off < best.Off {
				best, found = p, true
			}
		}
	}
	return best, found
}

// LibOffset is the package-level LibOffset for this binary.
func (b *Binary) LibOffset(start, fileOffset uint64) uint64 {
	return LibOffset(start, fileOffset, b.elf.Type, LoadSegments(b.elf))
}
