package unwind

import "github.com/gprof-dev/gprof/objfile"

// FuncBounds finds functions by a binary's call frame information: every
// FDE of .eh_frame (or .debug_frame) covers one function, or one part of
// one (a .cold split), whether the symbol table still names it or not.
// A stripped library's code that no exported symbol covers is thus told
// apart by function, not guessed from the nearest name. Safe for
// concurrent use once made.
type FuncBounds struct {
	eh, dbg cfiSection
	hasEH   bool
	hasDbg  bool
}

// NewFuncBounds reads f's call frame information; a file without any,
// or none (nil: symbols from a PDB alone), gives a FuncBounds that finds
// nothing.
func NewFuncBounds(f *objfile.File) *FuncBounds {
	b := &FuncBounds{}
	if f == nil {
		return b
	}
	if s := f.Section(".eh_frame"); s != nil && s.InFile() {
		if data, err := s.Data(); err == nil && len(data) > 0 {
			b.eh, b.hasEH = cfiSection{data: data, addr: s.Addr, eh: true}, true
			hs := f.EHFrameHdr()
			var hdr []byte
			if hs != nil {
				hdr, _ = hs.Data()
			}
			if hdr == nil || !b.eh.setHdr(hdr, hs.Addr) {
				b.eh.buildIndex()
			}
		}
	}
	if s := f.Section(".debug_frame"); s != nil && s.InFile() {
		if data, err := s.Data(); err == nil && len(data) > 0 {
			b.dbg = cfiSection{data: data}
			b.dbg.buildIndex()
			b.hasDbg = len(b.dbg.index) > 0
		}
	}
	return b
}

// Find returns the bounds [start, end) of the function whose code holds
// pc, a link-time virtual address.
func (b *FuncBounds) Find(pc uint64) (start, end uint64, ok bool) {
	var f fde
	if b.hasEH && b.eh.find(pc, &f) || b.hasDbg && b.dbg.find(pc, &f) {
		return f.start, f.end, true
	}
	return 0, 0, false
}
