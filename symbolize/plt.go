package symbolize

import (
	"debug/elf"
	"encoding/binary"
)

// pltSymbols names the PLT stubs of an x86-64 binary "NAME@plt", as
// objdump does. Rather than assume an entry order, each stub's indirect
// jump is decoded to find the GOT slot it jumps through, and the slot's
// dynamic relocation names the target; this covers .plt, .plt.sec (IBT)
// and .plt.got alike.
func pltSymbols(f *elf.File) []symbol {
	if f.Machine != elf.EM_X86_64 || f.Class != elf.ELFCLASS64 {
		return nil
	}
	dyn, err := f.DynamicSymbols()
	if err != nil {
		return nil
	}
	slots := make(map[uint64]string)
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA || (s.Name != ".rela.plt" && s.Name != ".rela.dyn") {
			continue
		}
		d, err := s.Data()
		if err != nil {
			continue
		}
		for ; len(d) >= 24; d = d[24:] {
			off := f.ByteOrder.Uint64(d)
			sym := f.ByteOrder.Uint64(d[8:]) >> 32
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
	var out []symbol
	for _, name := range []string{".plt", ".plt.sec", ".plt.got"} {
		s := f.Section(name)
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
					out = append(out, symbol{addr: s.Addr + start, size: size, name: name + "@plt"})
				}
				break
			}
		}
	}
	return out
}
