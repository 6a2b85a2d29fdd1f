package objfile

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"path/filepath"
)

// Entry returns an ELF file's entry point (0 for other formats) and
// whether the file is an executable, whose main threads start there: it
// has an interpreter or is not position-independent, and it is not a
// library (libc, for one, has an interpreter so that it can run and print
// its version, but its entry point is not where programs start). Stripped
// executables name nothing there.
func (f *File) Entry() (addr uint64, executable bool) {
	ef := f.elf
	if ef == nil || ef.Entry == 0 {
		return 0, false
	}
	exe := ef.Type == elf.ET_EXEC
	for _, p := range ef.Progs {
		exe = exe || p.Type == elf.PT_INTERP
	}
	if soname, _ := ef.DynString(elf.DT_SONAME); !exe || len(soname) > 0 {
		return ef.Entry, false
	}
	return ef.Entry, true
}

// DebugLink returns the file name and CRC an ELF file's .gnu_debuglink
// records for its separate debug file.
func (f *File) DebugLink() (name string, crc uint32, ok bool) {
	if f.elf == nil {
		return "", 0, false
	}
	s := f.elf.Section(".gnu_debuglink")
	if s == nil {
		return "", 0, false
	}
	d, err := s.Data()
	if err != nil {
		return "", 0, false
	}
	n := bytes.IndexByte(d, 0)
	if n <= 0 {
		return "", 0, false
	}
	off := (n + 4) &^ 3 // the name's NUL, then padding to 4
	if off+4 > len(d) {
		return "", 0, false
	}
	name = string(d[:n])
	if filepath.Base(name) != name {
		return "", 0, false
	}
	return name, f.elf.ByteOrder.Uint32(d[off:]), true
}

// PLTSymbols names the PLT stubs of an x86-64 ELF file "NAME@plt", as
// objdump does. Rather than assume an entry order, each stub's indirect
// jump is decoded to find the GOT slot it jumps through, and the slot's
// dynamic relocation names the target; this covers .plt, .plt.sec (IBT)
// and .plt.got alike. Other files have none.
func (f *File) PLTSymbols() []Symbol {
	ef := f.elf
	if ef == nil || ef.Machine != elf.EM_X86_64 || ef.Class != elf.ELFCLASS64 {
		return nil
	}
	dyn, err := ef.DynamicSymbols()
	if err != nil {
		return nil
	}
	slots := make(map[uint64]string)
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_RELA || (s.Name != ".rela.plt" && s.Name != ".rela.dyn") {
			continue
		}
		d, err := s.Data()
		if err != nil {
			continue
		}
		for ; len(d) >= 24; d = d[24:] {
			off := ef.ByteOrder.Uint64(d)
			sym := ef.ByteOrder.Uint64(d[8:]) >> 32
			if sym == 0 || sym > uint64(len(dyn)) {
				continue
			}
			if name := dyn[sym-1].Name; name != "" {
				slots[off] = name
			}
		}
	}
	if len(slots) == 0 {
		return nil
	}
	var out []Symbol
	for _, name := range []string{".plt", ".plt.sec", ".plt.got"} {
		s := ef.Section(name)
		if s == nil || s.Type != elf.SHT_PROGBITS {
			continue
		}
		d, err := s.Data()
		if err != nil {
			continue
		}
		size := s.Entsize
		if size == 0 || size > 32 {
			size = 16
		}
		for start := uint64(0); start+size <= uint64(len(d)); start += size {
			e := d[start : start+size]
			// jmp *disp32(%rip) is ff 25, possibly after endbr64 or a bnd
			// prefix; the first entry of .plt (which pushes and jumps to the
			// resolver) matches no relocated slot.
			for i := 0; i+6 <= len(e); i++ {
				if e[i] != 0xff || e[i+1] != 0x25 {
					continue
				}
				disp := int32(binary.LittleEndian.Uint32(e[i+2:]))
				slot := s.Addr + start + uint64(i) + 6 + uint64(int64(disp))
				if name, ok := slots[slot]; ok {
					out = append(out, Symbol{Addr: s.Addr + start, Size: size, Name: name + "@plt"})
				}
				break
			}
		}
	}
	return out
}

// DataSymbols returns an ELF file's defined data symbols (STT_OBJECT) of
// .dynsym and .symtab, as they are: for readers of a process's variables
// (an interpreter's runtime state). Other formats have none here.
func (f *File) DataSymbols() []Symbol {
	_, data := f.NamedSymbols(func([]byte) bool { return true })
	return data
}

// NamedSymbols returns the symbols of an ELF file's .symtab and .dynsym
// whose names keep accepts, as functions (those SymbolTable counts) and
// data (DataSymbols'), unsorted. It scans the raw tables and makes a
// string of the names kept only: for a reader that wants a few symbols
// of a large file while samples wait (the Python reader on meeting
// libpython, 16,700 symbols: 7-9 ms, most of it reading the sections,
// where DataSymbols then SymbolTable through debug/elf, which makes every
// name, took 33 ms, and 80 with the interpreter starting beside it).
// Other formats have none here.
func (f *File) NamedSymbols(keep func(name []byte) bool) (funcs, data []Symbol) {
	ef := f.elf
	if ef == nil {
		return nil, nil
	}
	size := 24
	if ef.Class == elf.ELFCLASS32 {
		size = 16
	}
	bo := ef.ByteOrder
	for _, typ := range []elf.SectionType{elf.SHT_SYMTAB, elf.SHT_DYNSYM} {
		sec := ef.SectionByType(typ)
		if sec == nil || int(sec.Link) >= len(ef.Sections) {
			continue
		}
		tab, err := sec.Data()
		if err != nil {
			continue
		}
		strs, err := ef.Sections[sec.Link].Data()
		if err != nil {
			continue
		}
		// Entry 0 is the undefined symbol.
		for off := size; off+size <= len(tab); off += size {
			e := tab[off : off+size]
			var s elf.Symbol
			nameOff := bo.Uint32(e)
			if ef.Class == elf.ELFCLASS32 {
				s.Value, s.Size = uint64(bo.Uint32(e[4:])), uint64(bo.Uint32(e[8:]))
				s.Info, s.Section = e[12], elf.SectionIndex(bo.Uint16(e[14:]))
			} else {
				s.Info, s.Section = e[4], elf.SectionIndex(bo.Uint16(e[6:]))
				s.Value, s.Size = bo.Uint64(e[8:]), bo.Uint64(e[16:])
			}
			if int(nameOff) >= len(strs) {
				continue
			}
			name := strs[nameOff:]
			if n := bytes.IndexByte(name, 0); n >= 0 {
				name = name[:n]
			}
			if len(name) == 0 || !keep(name) {
				continue
			}
			s.Name = string(name)
			if elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Section != elf.SHN_UNDEF && s.Value != 0 {
				data = append(data, Symbol{Name: s.Name, Addr: s.Value, Size: s.Size})
			} else if isFuncSymbol(ef, s) {
				funcs = append(funcs, Symbol{Name: s.Name, Addr: s.Value, Size: s.Size})
			}
		}
	}
	return funcs, data
}
