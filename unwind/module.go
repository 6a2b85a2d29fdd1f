package unwind

import (
	"bytes"
	"fmt"
	"os"

	"github.com/gprof-dev/gprof/objfile"
)

// module is one object file's unwind information, shared by every process
// and mapping that maps the file.
type module struct {
	id    uint32
	arch  arch
	name  string
	image []byte // the whole file, usually mmapped; sections slice into it
	unmap func() error
	loads []objfile.Segment
	eh    cfiSection
	dbg   cfiSection
	hasEH bool
	hasDb bool
	// gopcln is a Go binary's function table, whose per-function SP
	// deltas unwind the Go code that has no CFI: all of it in a binary
	// built with -ldflags=-w (the Go toolchain's own, for one), where
	// frame pointers alone lose the caller of every frameless leaf.
	gopcln *objfile.GoPCLN
}

// loadModule parses an object file's image. It keeps sub-slices of image.
func loadModule(name string, image []byte) (*module, error) {
	f, err := objfile.NewFile(bytes.NewReader(image), name)
	if err != nil {
		return nil, err
	}
	m := &module{name: name, image: image}
	switch a := f.Identity().Arch; a {
	case "x86_64":
		m.arch = archAMD64
	case "aarch64", "arm64":
		m.arch = archARM64
	default:
		return nil, fmt.Errorf("%s: unsupported machine %s", name, a)
	}
	if !f.Is64() || !f.LittleEndian() {
		return nil, fmt.Errorf("%s: not a 64-bit little-endian object file", name)
	}
	m.loads = f.Segments()

	// raw returns a section's bytes as a sub-slice of the image, so that
	// offsets between sections can be computed from capacities.
	raw := func(s *objfile.Section) []byte {
		if s == nil || !s.InFile() || s.Offset+s.Size > uint64(len(image)) {
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
	} else if hs := f.EHFrameHdr(); hs != nil {
		m.ehFromHdr(raw(hs), hs.Addr)
	}
	if s := f.Section(".gopclntab"); s != nil && m.arch == archAMD64 {
		m.gopcln = objfile.NewGoPCLN(f, raw(s))
	}
	if s := f.Section(".debug_frame"); s != nil && s.InFile() {
		b := raw(s)
		if s.Compressed {
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

// ehFromHdr finds .eh_frame through .eh_frame_hdr (hdr, at vaddr) when the
// section headers were stripped and only PT_GNU_EH_FRAME locates it.
func (m *module) ehFromHdr(hdr []byte, vaddr uint64) {
	if len(hdr) < 4 || hdr[0] != 1 {
		return
	}
	r := reader{b: hdr, off: 4}
	ehAddr := r.ptr(hdr[1], vaddr, vaddr)
	off, end, ok := m.fileRange(ehAddr)
	if r.bad || !ok {
		return
	}
	m.eh = cfiSection{data: m.image[off:end], addr: ehAddr, eh: true}
	m.hasEH = true
	if !m.eh.setHdr(hdr, vaddr) {
		m.eh.buildIndex()
	}
}

// fileRange returns the file offset of vaddr and the end of its segment's
// file contents.
func (m *module) fileRange(vaddr uint64) (off, end uint64, ok bool) {
	for _, p := range m.loads {
		if p.Addr <= vaddr && vaddr < p.Addr+p.FileSize {
			off = p.Offset + (vaddr - p.Addr)
			end = p.Offset + p.FileSize
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
	var best *objfile.Segment
	for i := range m.loads {
		p := &m.loads[i]
		lo := p.Offset &^ (page - 1)
		if lo <= fileOffset && fileOffset < p.Offset+p.FileSize {
			if best == nil || p.Exec {
				best = p
			}
		}
	}
	if best == nil {
		return 0, false
	}
	return start - fileOffset + best.Offset - best.Addr, true
}

// rule computes the CFI rule at a link-time pc. exact reports that pc is
// the address of an instruction (interrupted, not returned to).
func (m *module) rule(pc uint64, exact bool, out *rule) {
	var f fde
	sec := &m.eh
	if !m.hasEH || !sec.find(pc, &f) {
		sec = &m.dbg
		if !m.hasDb || !sec.find(pc, &f) {
			if !m.goRule(pc, out) {
				*out = rule{flags: flagNoCFI}
			}
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

// goRule makes the rule at link-time pc of a Go function from its SP
// delta, as the Go runtime's own traceback does: the return address sits
// just above the frame the function has pushed and allocated, and the
// caller's frame pointer just below it once the function has saved it
// (a Go function with a frame saves it first, before it allocates). A
// frameless leaf, which frame pointers skip the caller of, is unwound
// exactly. Functions that switch stacks (systemstack, morestack) are left
// to frame pointers; those that begin stacks (goexit, mstart) end them.
func (m *module) goRule(pc uint64, out *rule) bool {
	if m.gopcln == nil {
		return false
	}
	info, ok := m.gopcln.FrameInfo(pc)
	if !ok || info.SPWrite || info.SPDelta < 0 || info.SPDelta > 1<<30 {
		return false
	}
	*out = rule{cfa: regRule{kind: ruleReg, reg: slotSP, off: int32(info.SPDelta + 8)}, ra: regRule{kind: ruleOffset, off: -8}}
	if info.Top {
		out.ra = regRule{kind: ruleUndef}
	}
	if info.SPDelta >= 8 {
		out.fp = regRule{kind: ruleOffset, off: -16}
	}
	return true
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

// openModule loads the object file at path.
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
