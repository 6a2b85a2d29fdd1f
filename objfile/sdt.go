package objfile

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// SDTProbe is a statically defined tracing probe (USDT, SystemTap's
// <sys/sdt.h> and DTrace's): a place in the code a program marked for
// tracers, found in the ELF note section .note.stapsdt.
type SDTProbe struct {
	Provider, Name string
	// Addr is the probe's instruction (an SVMA), already moved by the
	// amount the file was prelinked by (see .stapsdt.base).
	Addr uint64
	// Semaphore is the SVMA of the probe's counter that the program
	// tests before preparing the probe's arguments, 0 when it has none:
	// a tracer increments it while it probes.
	Semaphore uint64
	// Args describes the arguments ("-4@%edi 8@%rax"), as sdt.h writes
	// them.
	Args string
}

// sdtNoteType is NT_STAPSDT, the type of the notes of .note.stapsdt.
const sdtNoteType = 3

// SDTProbes returns the USDT probes of an ELF file, in note order; none
// (and no error) for a file without them or of another format.
func (f *File) SDTProbes() ([]SDTProbe, error) {
	if f.elf == nil {
		return nil, nil
	}
	s := f.elf.Section(".note.stapsdt")
	if s == nil {
		return nil, nil
	}
	notes, err := s.Data()
	if err != nil {
		return nil, err
	}
	var base uint64
	if b := f.elf.Section(".stapsdt.base"); b != nil {
		base = b.Addr
	}
	return ParseSDTNotes(notes, f.elf.ByteOrder, f.Is64(), base)
}

// ParseSDTNotes reads the notes of a .note.stapsdt section: per note a
// header (namesz, descsz, type), the name "stapsdt", then the probe's
// address, the address the file's .stapsdt.base had when it was linked,
// its semaphore's address (all of the file's word size), and provider,
// name and arguments as NUL-terminated strings. base is where
// .stapsdt.base is now (0: none), which tells how far a prelinker moved
// the file.
func ParseSDTNotes(notes []byte, bo binary.ByteOrder, is64 bool, base uint64) ([]SDTProbe, error) {
	word := 4
	if is64 {
		word = 8
	}
	readWord := func(b []byte) uint64 {
		if is64 {
			return bo.Uint64(b)
		}
		return uint64(bo.Uint32(b))
	}
	var out []SDTProbe
	for len(notes) > 0 {
		if len(notes) < 12 {
			return out, errors.New(".note.stapsdt: a note is cut short")
		}
		namesz, descsz, typ := uint64(bo.Uint32(notes)), uint64(bo.Uint32(notes[4:])), bo.Uint32(notes[8:])
		notes = notes[12:]
		nameEnd := (namesz + 3) &^ 3
		descEnd := (descsz + 3) &^ 3
		if nameEnd > uint64(len(notes)) || descEnd > uint64(len(notes))-nameEnd {
			return out, errors.New(".note.stapsdt: a note is larger than the section")
		}
		name, desc := notes[:namesz], notes[nameEnd:nameEnd+descsz]
		notes = notes[nameEnd+descEnd:]
		if typ != sdtNoteType || string(bytes.TrimRight(name, "\x00")) != "stapsdt" || len(desc) < 3*word {
			continue
		}
		p := SDTProbe{Addr: readWord(desc), Semaphore: readWord(desc[2*word:])}
		if linked := readWord(desc[word:]); base != 0 && linked != 0 {
			p.Addr += base - linked
			if p.Semaphore != 0 {
				p.Semaphore += base - linked
			}
		}
		strs := bytes.Split(desc[3*word:], []byte{0})
		if len(strs) < 3 {
			continue
		}
		p.Provider, p.Name, p.Args = string(strs[0]), string(strs[1]), string(strs[2])
		if p.Provider == "" || p.Name == "" {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// FileOffset returns where SVMA addr lies in the file: in which loadable
// segment's file bytes, at what offset. False when no segment holds it in
// the file (a .bss address, say).
func (f *File) FileOffset(addr uint64) (uint64, bool) {
	for _, s := range f.Segments() {
		if addr >= s.Addr && addr-s.Addr < s.FileSize {
			return s.Offset + (addr - s.Addr), true
		}
	}
	return 0, false
}
