package symbolize

import (
	"debug/dwarf"
	"debug/gosym"
	"io"
	"sort"
	"strconv"
	"sync"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/unwind"
)

// Frame is one level of a lookup result; see profile.SymbolFrame. FuncAddr
// is lib-relative, like the address looked up.
type Frame = profile.SymbolFrame

// index is everything Lookup needs, built once per binary. The symbol
// table is built eagerly on first use; DWARF compilation units are parsed
// only when a lookup lands in them, so symbolizing a handful of addresses
// in a large binary touches a handful of units.
type index struct {
	base      uint64
	syms      []symbol // sorted by addr
	dw        *dwarfIndex
	gopcln    *objfile.GoPCLN // Go 1.20+ line table, with inlining
	gotab     *gosym.Table    // older Go line tables
	debugFile io.Closer       // separate debug file, if one was found
	debugPath string
	rejected  []string // debug files of other builds that were skipped

	mu        sync.Mutex
	demangled map[string]string

	// funcs, from the binary's call frame information, bounds the code
	// no symbol covers (unnamedFunc); read on the first such lookup.
	funcsOnce sync.Once
	funcs     *unwind.FuncBounds
	obj       *objfile.File
}

type symbol struct {
	addr, size uint64
	end        uint64 // addr+size, or up to the next symbol when size is 0
	name       string
}

// Lookup returns the frames at lib-relative address relAddr, outer
// function first and then each inlined callee inward; the last frame's
// file and line are those of the instruction itself. It returns nil when
// nothing is known about the address.
//
// Callers symbolizing return addresses should look up the address minus
// one, so that the result names the call rather than the instruction after
// it (which may be on another line or, after a call to a function that does
// not return, in another function).
func (b *Binary) Lookup(relAddr uint64) []Frame {
	ix, err := b.index()
	if err != nil {
		return nil
	}
	frames := ix.lookup(relAddr)
	for i := range frames {
		// Go's line table says -1 for generated code; the model's "no
		// line" is 0, and profile formats store lines unsigned.
		if frames[i].Line < 0 {
			frames[i].Line = 0
		}
	}
	return frames
}

// DebugFile returns the path of the separate debug file in use, or "".
func (b *Binary) DebugFile() string {
	ix, err := b.index()
	if err != nil {
		return ""
	}
	return ix.debugPath
}

// RejectedDebugFiles says, one line each, which debug files were found for
// the binary but skipped as another build's (their build-id or CRC does
// not match). Users want to hear of these: a stale debug file is
// otherwise a silent loss of names.
func (b *Binary) RejectedDebugFiles() []string {
	ix, err := b.index()
	if err != nil {
		return nil
	}
	return ix.rejected
}

func (b *Binary) index() (*index, error) {
	b.idxOnce.Do(func() { b.idx, b.idxErr = b.buildIndex() })
	return b.idx, b.idxErr
}

func (b *Binary) buildIndex() (*index, error) {
	ix := &index{base: b.obj.Identity().Base, demangled: make(map[string]string), obj: b.obj}
	files := []*objfile.File{b.obj}
	dwarfFile := b.obj
	if !hasDWARF(b.obj) && !b.cfg.noDebug {
		df, path, rejected := b.findDebugFile()
		ix.rejected = rejected
		if df != nil {
			ix.debugFile, ix.debugPath = df, path
			files = append(files, df.obj)
			if hasDWARF(df.obj) {
				dwarfFile = df.obj
			}
		}
	}
	var syms []symbol
	for _, f := range files {
		syms = appendSymbols(syms, f)
	}
	for _, s := range b.obj.PLTSymbols() {
		syms = append(syms, symbol{addr: s.Addr, size: s.Size, name: s.Name})
	}
	entry, isExe := b.obj.Entry()
	if isExe {
		// An unsized _start at the entry point; a real symbol at the same
		// address takes precedence in finishSymbols.
		syms = append(syms, symbol{addr: entry, name: entryName})
	}
	ix.syms = finishSymbols(syms, b.obj)
	capEntrySymbol(ix.syms, entry)
	if hasDWARF(dwarfFile) {
		if d, err := dwarfFile.DWARF(); err == nil {
			ix.dw = newDWARFIndex(d)
		}
	}
	if ix.gopcln = objfile.NewGoPCLN(b.obj, nil); ix.gopcln == nil {
		ix.gotab = objectGoTable(b.obj, ix.syms)
	}
	return ix, nil
}

// hasDWARF reports whether f itself carries DWARF debug info.
func hasDWARF(f *objfile.File) bool {
	for _, name := range []string{".debug_info", ".zdebug_info"} {
		if s := f.Section(name); s != nil && s.InFile() && s.Size > 0 {
			return true
		}
	}
	return false
}

// entryName names an executable's entry point when no symbol does, as in
// the stripped executables distributions ship: by the C runtime's
// convention the entry point is _start, and it is the outermost frame of
// every main-thread stack, where a user looks for it (objfile.File.Entry
// says which files are executables).
const entryName = "_start"

// entryMaxSize bounds the unnamed entry symbol, so that it cannot swallow
// the stripped functions that follow it. _start is 0x26 bytes on x86-64
// glibc and about 0x30 on arm64.
const entryMaxSize = 64

// capEntrySymbol limits the synthetic entry symbol at entry, if it
// survived, to entryMaxSize bytes.
func capEntrySymbol(syms []symbol, entry uint64) {
	i := sort.Search(len(syms), func(i int) bool { return syms[i].addr >= entry })
	if i < len(syms) && syms[i].addr == entry && syms[i].size == 0 && syms[i].name == entryName {
		syms[i].end = min(syms[i].end, entry+entryMaxSize)
	}
}

// appendSymbols adds the function symbols of f's tables (for ELF, .symtab
// and .dynsym, by objfile's rules).
func appendSymbols(dst []symbol, f *objfile.File) []symbol {
	syms, _ := f.SymbolTable()
	for _, s := range syms {
		dst = append(dst, symbol{addr: s.Addr, size: s.Size, name: s.Name})
	}
	return dst
}

// finishSymbols sorts syms, keeps one symbol per address (the sized one,
// else the first seen, which is the .symtab one) and bounds unsized symbols
// by the next symbol or the end of their section. Unlike
// objfile.File.Symbols it keeps a symbol's own size, which profiles show,
// apart from the end it is given.
func finishSymbols(syms []symbol, f *objfile.File) []symbol {
	sort.SliceStable(syms, func(i, j int) bool { return syms[i].addr < syms[j].addr })
	out := syms[:0]
	for _, s := range syms {
		if n := len(out); n > 0 && out[n-1].addr == s.addr {
			if out[n-1].size == 0 && s.size > 0 {
				out[n-1] = s
			}
			continue
		}
		out = append(out, s)
	}
	var exec []*objfile.Section
	for _, s := range f.Sections() {
		if s.Exec {
			exec = append(exec, s)
		}
	}
	for i := range out {
		s := &out[i]
		if s.size > 0 {
			s.end = s.addr + s.size
			continue
		}
		s.end = ^uint64(0)
		if i+1 < len(out) {
			s.end = out[i+1].addr
		}
		for _, sec := range exec {
			if sec.Addr <= s.addr && s.addr < sec.Addr+sec.Size {
				s.end = min(s.end, sec.Addr+sec.Size)
			}
		}
	}
	return out
}

// symbolAt returns the symbol covering addr. Symbols rarely nest, but when
// they do (an alias with a larger size, say) the covering one may not be
// the nearest, so a few predecessors are tried.
func (ix *index) symbolAt(addr uint64) *symbol {
	i := sort.Search(len(ix.syms), func(i int) bool { return ix.syms[i].addr > addr }) - 1
	for j := i; j >= 0 && j > i-4; j-- {
		if s := &ix.syms[j]; addr < s.end {
			return s
		}
	}
	return nil
}

func (ix *index) lookup(relAddr uint64) []Frame {
	pc := relAddr + ix.base
	sym := ix.symbolAt(pc)
	var frames []Frame
	if ix.dw != nil {
		frames = ix.dw.lookup(pc)
	}
	if frames == nil && ix.gopcln != nil {
		if gf, entry, end := ix.gopcln.Lookup(pc); gf != nil {
			fr := make([]Frame, len(gf))
			for i, f := range gf {
				fr[i] = Frame{Function: f.Function, File: f.File, Line: f.Line}
			}
			fr[0].FuncAddr, fr[0].FuncSize = entry-ix.base, end-entry
			return fr
		}
	}
	if frames == nil && ix.gotab != nil {
		if file, line, fn := ix.gotab.PCToLine(pc); fn != nil {
			frames = []Frame{{
				Function: fn.Name,
				FuncAddr: fn.Entry - ix.base,
				FuncSize: fn.End - fn.Entry,
				File:     file,
				Line:     line,
			}}
			return frames
		}
	}
	if frames == nil {
		if sym == nil {
			return ix.unnamedFunc(pc)
		}
		frames = []Frame{{Function: sym.name}}
	}
	outer := &frames[0]
	if sym != nil {
		outer.FuncAddr, outer.FuncSize = sym.addr-ix.base, sym.size
		if outer.Function == "" {
			outer.Function = sym.name
		}
	}
	for i := range frames {
		frames[i].Function = ix.demangle(frames[i].Function)
	}
	return frames
}

// unnamedFunc names code that no symbol, line table or DWARF covers (a
// stripped library's internal functions: libcrypto's SHA-256 code, under
// no exported name) by the function its call frame information says holds
// it: "sub_29c240", after the function's lib-relative start, with the
// function's bounds. Every address of one function then has one name, so
// that a report shows one row for it rather than one per address, and no
// figure changes: a function is the sum of its addresses. The nearest
// exported symbol would be a guess, and a wrong one for such code
// (libcrypto's SHA-256 block function lies 0x9680 bytes past SHA1_Init).
// Code no FDE covers stays unknown.
func (ix *index) unnamedFunc(pc uint64) []Frame {
	ix.funcsOnce.Do(func() { ix.funcs = unwind.NewFuncBounds(ix.obj) })
	start, end, ok := ix.funcs.Find(pc)
	if !ok || start < ix.base {
		return nil
	}
	rel := start - ix.base
	return []Frame{{Function: unnamedPrefix + strconv.FormatUint(rel, 16), FuncAddr: rel, FuncSize: end - start}}
}

// unnamedPrefix starts the name of a function its binary does not name
// (unnamedFunc), followed by its lib-relative start in hex, as
// disassemblers name such functions.
const unnamedPrefix = "sub_"

// newDWARFIndex lists the compilation units and the address ranges they
// cover; their contents are read on demand.
func newDWARFIndex(d *dwarf.Data) *dwarfIndex { return newUnitIndex(d, false) }

// newUnitIndex is newDWARFIndex; zeroIsCode keeps units that start at
// address 0, where a relocatable object's code starts but where a linked
// file has only units the linker discarded.
func newUnitIndex(d *dwarf.Data, zeroIsCode bool) *dwarfIndex {
	dx := &dwarfIndex{d: d, refNames: make(map[dwarf.Offset]string)}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			u := &unit{entry: e}
			ui := int32(len(dx.units))
			dx.units = append(dx.units, u)
			ranges, _ := d.Ranges(e)
			if len(ranges) == 0 && e.Children {
				// No ranges on the unit: learn them from its contents.
				dx.parse(u)
				for _, s := range u.top {
					ranges = append(ranges, [2]uint64{s.lo, s.hi})
				}
				ranges = append(ranges, u.seqs...)
			}
			for _, rg := range ranges {
				if rg[0] < rg[1] && (rg[0] != 0 || zeroIsCode) {
					dx.cus = append(dx.cus, span{lo: rg[0], hi: rg[1], node: ui})
				}
			}
		}
		r.SkipChildren()
	}
	sort.Slice(dx.cus, func(i, j int) bool { return dx.cus[i].lo < dx.cus[j].lo })
	return dx
}
