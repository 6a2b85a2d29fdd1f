package unwind

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
)

// module is one ELF file's unwind information, shared by every process and
// mapping that maps the file.
type module struct {
	id    uint32
	arch  arch
	name  string
	image []byte // the whole file, usually mmapped; sections slice into it
	unmap func() error
	loads []elf.ProgHeader
	eh    cfiSection
	dbg   cfiSection
	hasEH bool
	hasDb bool
}

// loadModule parses an ELF image. It keeps sub-slices of image.
func loadModule(name string, image []byte) (*module, error) {
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		return nil, err
	}
	m := &module{name: name, image: image}
	switch f.Machine {
	case elf.EM_X86_64:
		m.arch = archAMD64
	case elf.EM_AARCH64:
		m.arch = archARM64
	default:
		return nil, fmt.Errorf("%s: unsupported machine %v", name, f.Machine)
	}
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB {
		return nil, fmt.Errorf("%s: not a 64-bit little-endian ELF file", name)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			m.loads = append(m.loads, p.ProgHeader)
		}
	}

	// raw returns a section's bytes as a sub-slice of the image, so that
	// offsets between sections can be computed from capacities.
	raw := func(s *elf.Section) []byte {
		if s == nil || s.Type == elf.SHT_NOBITS || s.Offset+s.Size > uint64(len(image)) {
			return nil
		}
		return image[s.Offset : s.Offset+s.Size]
	}
	if s := f.Section(".eh_frame"); s != nil {
		if b := raw(s); len(b) > 0 {
			m.eh = cfiSection{data: b, addr: s.Addr, eh: true}
			m.hasEH = true
			hs := f.Section(".eh_frame_hdr")
			if hb := raw(hs); hb == nil || !m.eh.setHdr(hb, hs.Addr) {
				m.eh.buildIndex()
			}
		}
	} else {
		m.ehFromProgs(f)
	}
	if s := f.Section(".debug_frame"); s != nil && s.Type != elf.SHT_NOBITS {
		b := raw(s)
		if s.Flags&elf.SHF_COMPRESSED != 0 {
			// A compressed section is inflated once into its own slice.
			b, err = s.Data()
			if err != nil {
				b = nil
			}
		}
		if len(b) > 0 {
			m.dbg = cfiSection{data: b}
			m.dbg.buildIndex()
			m.hasDb = len(m.dbg.index) > 0
		}
	}
	return m, nil
}

// ehFromProgs finds .eh_frame through PT_GNU_EH_FRAME when the section
// headers were stripped.
func (m *module) ehFromProgs(f *elf.File) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_GNU_EH_FRAME || p.Off+p.Filesz > uint64(len(m.image)) {
			continue
		}
		hdr := m.image[p.Off : p.Off+p.Filesz]
		if len(hdr) < 4 || hdr[0] != 1 {
			return
		}
		r := reader{b: hdr, off: 4}
		ehAddr := r.ptr(hdr[1], p.Vaddr, p.Vaddr)
		off, end, ok := m.fileRange(ehAddr)
		if r.bad || !ok {
			return
		}
		m.eh = cfiSection{data: m.image[off:end], addr: ehAddr, eh: true}
		m.hasEH = true
		if !m.eh.setHdr(hdr, p.Vaddr) {
			m.eh.buildIndex()
		}
		return
	}
}

// fileRange returns the file offset of vaddr and the end of its segment's
// file contents.
func (m *module) fileRange(vaddr uint64) (off, end uint64, ok bool) {
	for _, p := range m.loads {
		if p.Vaddr <= vaddr && vaddr < p.Vaddr+p.Filesz {
			off = p.Off + (vaddr - p.Vaddr)
			end = p.Off + p.Filesz
			if end > uint64(len(m.image)) {
				return 0, 0, false
			}
			return off, end, true
		}
	}
	return 0, 0, false
}

// bias returns what to subtract from an address in a mapping of the file
// at fileOffset, starting at start, to get a link-time virtual address.
func (m *module) bias(start, fileOffset uint64) (uint64, bool) {
	const page = 4096
	var best *elf.ProgHeader
	for i := range m.loads {
		p := &m.loads[i]
		lo := p.Off &^ (page - 1)
		if lo <= fileOffset && fileOffset < p.Off+p.Filesz {
			if best == nil || p.Flags&elf.PF_X != 0 {
				best = p
			}
		}
	}
	if best == nil {
		return 0, false
	}
	return start - fileOffset + best.Off - best.Vaddr, true
}

// rule computes the CFI rule at a link-time pc. exact reports that pc is
// the address of an instruction (interrupted, not returned to).
func (m *module) rule(pc uint64, exact bool, out *rule) {
	var f fde
	sec := &m.eh
	if !m.hasEH || !sec.find(pc, &f) {
		sec = &m.dbg
		if !m.hasDb || !sec.find(pc, &f) {
			*out = rule{flags: flagNoCFI}
			return
		}
	}
	at := pc
	if f.cie.signal && !exact {
		// Return addresses are looked up at pc-1 to stay inside the call's
		// function; a signal trampoline is entered at its first byte, so
		// its row is the one at the return address itself.
		at = pc + 1
	}
	if !sec.evalRow(m.arch, &f, at, out) {
		*out = rule{flags: flagBad}
		return
	}
	if m.arch == archAMD64 && out.ra.kind == ruleUnset {
		out.flags |= flagBad
	}
}

// sigreturnAMD64 is "mov $15, %rax; syscall", the body of every x86-64
// rt_sigreturn trampoline (glibc's __restore_rt, musl's __restore_rt).
var sigreturnAMD64 = []byte{0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05}

// isSigreturn reports whether the code at link-time address pc is a
// rt_sigreturn trampoline, for signal frames whose trampoline lacks CFI.
func (m *module) isSigreturn(pc uint64) bool {
	if m.arch != archAMD64 {
		return false
	}
	off, end, ok := m.fileRange(pc)
	if !ok || end-off < uint64(len(sigreturnAMD64)) {
		return false
	}
	return bytes.Equal(m.image[off:off+uint64(len(sigreturnAMD64))], sigreturnAMD64)
}

func (m *module) close() error {
	if m.unmap != nil {
		return m.unmap()
	}
	return nil
}

// openModule loads the ELF file at path.
func openModule(path string) (*module, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	image, unmap, err := mapFile(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	m, err := loadModule(path, image)
	if err != nil {
		if unmap != nil {
			unmap()
		}
		return nil, err
	}
	m.unmap = unmap
	return m, nil
}
