package objfile

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

func (f *File) openELF() error {
	ef, err := elf.NewFile(f.r)
	if err != nil {
		return fmt.Errorf("objfile: %s: %w", f.path, err)
	}
	f.elf = ef
	for _, s := range ef.Sections {
		sec := &Section{Name: s.Name, Addr: s.Addr, Size: s.Size, Offset: s.Offset,
			Exec:       s.Flags&elf.SHF_EXECINSTR != 0 && s.Flags&elf.SHF_ALLOC != 0,
			Alloc:      s.Flags&elf.SHF_ALLOC != 0,
			Compressed: s.Flags&elf.SHF_COMPRESSED != 0}
		if s.Type != elf.SHT_NOBITS {
			s := s
			sec.r = s
			sec.data = s.Data // decompresses SHF_COMPRESSED sections
		}
		f.sections = append(f.sections, sec)
	}
	f.id = elfIdentity(ef, f.path)
	return nil
}

// elfIdentity computes the identity of ef, known by path: breakpad's debug
// ID from the GNU build-id or, failing that, from a hash of .text.
func elfIdentity(ef *elf.File, path string) Identity {
	id := Identity{
		Format:    ELF,
		Name:      filepath.Base(path),
		Path:      path,
		DebugName: filepath.Base(path),
		DebugPath: path,
		Arch:      elfArch(ef.Machine),
		Base:      elfRelativeBase(ef),
	}
	little := ef.ByteOrder.Uint16([]byte{1, 0}) == 1
	if bid := elfBuildID(ef); len(bid) > 0 {
		id.BuildID = bid
		id.CodeID = fmt.Sprintf("%x", bid)
		id.BreakpadID = BreakpadID(bid, little)
		return id
	}
	if h, ok := elfTextHash(ef); ok {
		id.BreakpadID = BreakpadID(h[:], little)
	}
	return id
}

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

// elfBuildID returns ef's GNU build-id, from .note.gnu.build-id if present,
// else from any note section or PT_NOTE segment, as section headers may be
// stripped.
func elfBuildID(f *elf.File) []byte {
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

// elfLoadSegments returns the headers of f's PT_LOAD segments in file order.
func elfLoadSegments(f *elf.File) []elf.ProgHeader {
	var loads []elf.ProgHeader
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			loads = append(loads, p.ProgHeader)
		}
	}
	return loads
}

// elfRelativeBase returns the virtual address of f's first PT_LOAD segment,
// the address lib-relative addresses count from.
func elfRelativeBase(f *elf.File) uint64 {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			return p.Vaddr
		}
	}
	return 0
}

// elfLibOffset returns the Offset of a profile.Lib for a mapping that starts
// at address start and maps the file from fileOffset: the value such that
// start-offset is the address the binary's relative address 0 (the first
// PT_LOAD's vaddr) was loaded at, as samply and breakpad count. loads are
// the binary's PT_LOAD headers in file order.
//
// The file offset, not the start address, says which bytes a mapping
// holds, for every ELF type: an executable (ET_EXEC) is loaded at its link
// address, but a program may map its text again elsewhere (V8 does so with
// node's builtins), and that copy must name the same functions.
func elfLibOffset(start, fileOffset uint64, typ elf.Type, loads []elf.ProgHeader) uint64 {
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

// elfArch names a machine the way uname -m does, which is what profiles
// show.
func elfArch(m elf.Machine) string {
	switch m {
	case elf.EM_X86_64:
		return "x86_64"
	case elf.EM_386:
		return "x86"
	case elf.EM_AARCH64:
		return "aarch64"
	case elf.EM_ARM:
		return "arm"
	case elf.EM_RISCV:
		return "riscv64"
	case elf.EM_PPC64:
		return "ppc64"
	case elf.EM_PPC:
		return "ppc"
	case elf.EM_S390:
		return "s390x"
	case elf.EM_MIPS:
		return "mips"
	case elf.EM_LOONGARCH:
		return "loongarch64"
	}
	return fmt.Sprintf("elf-machine-%d", uint16(m))
}

// elfTextHash is breakpad's identity for files without a build-id: the
// first page of .text folded into 16 bytes by XOR.
func elfTextHash(f *elf.File) (h [16]byte, ok bool) {
	s := f.Section(".text")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return h, false
	}
	n := min(s.Size, 4096)
	buf := make([]byte, n)
	if _, err := io.ReadFull(io.NewSectionReader(s, 0, int64(n)), buf); err != nil {
		return h, false
	}
	for i, c := range buf {
		h[i%16] ^= c
	}
	return h, true
}

// elfSymbols returns the function-like symbols of .symtab and .dynsym.
// Assembly often leaves symbols untyped, so untyped symbols count when they
// sit in an executable section.
func (f *File) elfSymbols() []Symbol {
	funcs, _ := f.NamedSymbols(func([]byte) bool { return true })
	return funcs
}

// isFuncSymbol says whether s names code: a function, or an untyped
// symbol in an executable section that is no local label or ARM mapping
// symbol.
func isFuncSymbol(ef *elf.File, s elf.Symbol) bool {
	if s.Value == 0 || s.Name == "" || s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE {
		return false
	}
	switch elf.ST_TYPE(s.Info) {
	case elf.STT_FUNC, elf.STT_GNU_IFUNC:
		return true
	case elf.STT_NOTYPE:
		if int(s.Section) >= len(ef.Sections) || ef.Sections[s.Section].Flags&elf.SHF_EXECINSTR == 0 {
			return false
		}
		return s.Name[0] != '$' && !strings.HasPrefix(s.Name, ".L")
	}
	return false
}

// Placement is what placing a mapping of a file in a process needs, kept
// apart from the file so that it outlives it.
type Placement struct {
	exec  bool // an ELF executable: loaded at its link address
	loads []elf.ProgHeader
	segs  []Segment
}

// Placement returns what LibOffset needs of f.
func (f *File) Placement() Placement {
	p := Placement{segs: f.Segments()}
	if f.elf != nil {
		p.exec = f.elf.Type == elf.ET_EXEC
		p.loads = elfLoadSegments(f.elf)
		return p
	}
	// Other formats: their loadable segments with file contents, counted
	// from Identity.Base (a Mach-O file's __PAGEZERO holds no bytes).
	for _, s := range p.segs {
		if s.FileSize > 0 {
			p.loads = append(p.loads, elf.ProgHeader{Type: elf.PT_LOAD, Off: s.Offset, Vaddr: s.Addr,
				Filesz: s.FileSize, Memsz: s.Size, Align: s.Align})
		}
	}
	if len(p.loads) > 0 && f.id.Base < p.loads[0].Vaddr {
		// A PE image's headers come first, at the image base.
		p.loads = append([]elf.ProgHeader{{Type: elf.PT_LOAD, Vaddr: f.id.Base}}, p.loads...)
	}
	return p
}

// Known reports whether the placement came from a file.
func (p Placement) Known() bool { return p.loads != nil }

// Segments returns the file's loadable segments.
func (p Placement) Segments() []Segment { return p.segs }

// LibOffset returns the Offset of a profile.Lib for a mapping that starts at
// start and maps the file from fileOffset: the value such that start-offset
// is the address the file's relative address 0 was loaded at. The file
// offset, not the start address, says which bytes a mapping holds, even
// for an ELF executable, whose text a program may map again away from its
// link address (V8 does so with node's builtins).
func (p Placement) LibOffset(start, fileOffset uint64) uint64 {
	typ := elf.ET_DYN
	if p.exec {
		typ = elf.ET_EXEC
	}
	return elfLibOffset(start, fileOffset, typ, p.loads)
}
