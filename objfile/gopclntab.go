package objfile

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sort"
)

// GoPCLN reads the line table of Go 1.20 and later (.gopclntab), which Go
// binaries keep even when stripped of symbols and DWARF, together with its
// inline tree, which debug/gosym does not expose: without it, an inlined
// callee's file and line would show under its caller's name. The layout is
// the runtime's (runtime/symtab.go, runtime/symtabinl.go). The symbolizer
// reads names and lines from it, the unwinder each function's frame size
// (its pc-to-SP-delta table), which is how Go binaries without DWARF call
// frame information, the stripped ones, can be unwound exactly.
type GoPCLN struct {
	order     binary.ByteOrder
	quantum   uint64 // instruction size unit of pc deltas
	nfunc     int
	funcnames []byte // NUL-terminated names, by nameOff
	cutab     []byte // uint32 file offsets per compilation unit
	filetab   []byte // NUL-terminated file names
	pctab     []byte // pc-value tables
	funcs     []byte // ftab, then the _func records it points to
	text      uint64 // the address entry offsets count from
	// gofunc is the address funcdata offsets count from (moduledata's
	// gofunc); inline trees are read from the section holding it. A nil
	// section means no inline trees are known.
	gofunc  uint64
	funcSec *Section
}

const (
	go120Magic = 0xfffffff1
	// The fixed part of runtime._func, up to and including nfuncdata.
	funcHeaderSize = 44
	// Indexes of the inline tables among a function's pcdata and funcdata
	// (internal/abi: PCDATA_InlTreeIndex, FUNCDATA_InlTree).
	pcdataInlTreeIndex = 2
	funcdataInlTree    = 3
	inlinedCallSize    = 16 // runtime.inlinedCall
	// maxInlineDepth bounds a walk up a (possibly corrupt) inline tree.
	maxInlineDepth = 64
)

// NewGoPCLN parses f's .gopclntab if it is in the Go 1.20+ format, and
// returns nil if not. data holds the section's bytes when the caller has
// them (the unwinder maps whole files); nil reads them.
func NewGoPCLN(f *File, data []byte) *GoPCLN {
	s := f.Section(".gopclntab")
	if s == nil || !s.InFile() {
		return nil
	}
	if data == nil {
		var err error
		if data, err = s.Data(); err != nil {
			return nil
		}
	}
	if len(data) < 8 {
		return nil
	}
	var order binary.ByteOrder = binary.LittleEndian
	if !f.LittleEndian() {
		order = binary.BigEndian
	}
	if order.Uint32(data) != go120Magic || data[4] != 0 || data[5] != 0 {
		return nil
	}
	ptr := int(data[7])
	if ptr != 4 && ptr != 8 || len(data) < 8+8*ptr {
		return nil
	}
	word := func(i int) uint64 { // the i-th pointer-sized header field after the first 8 bytes
		if ptr == 4 {
			return uint64(order.Uint32(data[8+4*i:]))
		}
		return order.Uint64(data[8+8*i:])
	}
	sub := func(from, to uint64) []byte {
		if from > to || to > uint64(len(data)) {
			return nil
		}
		return data[from:to]
	}
	nameOff, cuOff, fileOff, pcOff, funcOff := word(3), word(4), word(5), word(6), word(7)
	t := &GoPCLN{
		order:     order,
		quantum:   uint64(max(data[6], 1)),
		nfunc:     int(word(0)),
		funcnames: sub(nameOff, cuOff),
		cutab:     sub(cuOff, fileOff),
		filetab:   sub(fileOff, pcOff),
		pctab:     sub(pcOff, funcOff),
		funcs:     sub(funcOff, uint64(len(data))),
	}
	if t.funcnames == nil || t.cutab == nil || t.filetab == nil || t.pctab == nil ||
		t.nfunc <= 0 || uint64(len(t.funcs)) < uint64(t.nfunc+1)*8 {
		return nil
	}
	if text, gofunc, ok := goModuleData(f, order, s.Addr, s.Addr+nameOff, ptr); ok {
		t.text, t.gofunc = text, gofunc
		for _, sec := range f.Sections() {
			if sec.InFile() && sec.Alloc && sec.Addr <= gofunc && gofunc < sec.Addr+sec.Size {
				t.funcSec = sec
			}
		}
		return t
	}
	// No module data: text starts at runtime.text, else at .text.
	if sec := f.Section(".text"); sec != nil {
		t.text = sec.Addr
	}
	syms, _ := f.SymbolTable()
	for _, sym := range syms {
		if sym.Name == "runtime.text" {
			t.text = sym.Addr
		}
	}
	return t
}

// goModuleData finds the runtime's moduledata for the pclntab at pcln, the
// one record that says where text starts and where funcdata offsets count
// from (the go:func.* symbol, absent from stripped binaries). It is the
// pointer-aligned record whose first two words point at the pclntab header
// and its function name table. Go 1.26 keeps it in .go.module, earlier
// releases in .noptrdata.
func goModuleData(f *File, order binary.ByteOrder, pcln, funcnames uint64, ptr int) (text, gofunc uint64, ok bool) {
	// Word indexes in moduledata (Go 1.20 through 1.26): seven pointers
	// and slices, then findfunctab, minpc, maxpc, text at 22; ...,
	// rodata at 39 and gofunc at 40.
	const textWord, rodataWord, gofuncWord = 22, 39, 40
	for _, name := range []string{".go.module", ".noptrdata"} {
		s := f.Section(name)
		if s == nil || !s.InFile() {
			continue
		}
		d, err := s.Data()
		if err != nil {
			continue
		}
		word := func(at, i int) uint64 {
			if ptr == 4 {
				return uint64(order.Uint32(d[at+4*i:]))
			}
			return order.Uint64(d[at+8*i:])
		}
		for at := 0; at+(gofuncWord+1)*ptr <= len(d); at += ptr {
			if word(at, 0) != pcln || word(at, 1) != funcnames {
				continue
			}
			text, rodata, gofunc := word(at, textWord), word(at, rodataWord), word(at, gofuncWord)
			if inExec(f, text) && rodata <= gofunc {
				return text, gofunc, true
			}
		}
	}
	return 0, 0, false
}

func inExec(f *File, addr uint64) bool {
	for _, s := range f.Sections() {
		if s.Exec && s.Addr <= addr && addr < s.Addr+s.Size {
			return true
		}
	}
	return false
}

// goFunc is one function's record in the table.
type goFunc struct {
	entry, end uint64
	rec        []byte // the _func record and its pcdata and funcdata arrays
}

func (t *GoPCLN) u32(b []byte, i int) uint32 { return t.order.Uint32(b[i:]) }

// funcAt returns the function holding pc.
func (t *GoPCLN) funcAt(pc uint64) (goFunc, bool) {
	if pc < t.text {
		return goFunc{}, false
	}
	off := pc - t.text
	// ftab has nfunc+1 entries {entryOff, funcOff}; the last ends the text.
	i := sort.Search(t.nfunc+1, func(i int) bool { return uint64(t.u32(t.funcs, 8*i)) > off }) - 1
	if i < 0 || i >= t.nfunc {
		return goFunc{}, false
	}
	fo := uint64(t.u32(t.funcs, 8*i+4))
	if fo+funcHeaderSize > uint64(len(t.funcs)) {
		return goFunc{}, false
	}
	rec := t.funcs[fo:]
	n := uint64(t.u32(rec, 28)) + uint64(rec[43]) // npcdata + nfuncdata
	if funcHeaderSize+4*n > uint64(len(rec)) {
		return goFunc{}, false
	}
	return goFunc{
		entry: t.text + uint64(t.u32(rec, 0)),
		end:   t.text + uint64(t.u32(t.funcs, 8*i+8)),
		rec:   rec[:funcHeaderSize+4*n],
	}, true
}

// pcdata returns the offset in pctab of fn's i-th pcdata table, 0 if none.
func (t *GoPCLN) pcdata(fn goFunc, i uint32) uint32 {
	if i >= t.u32(fn.rec, 28) {
		return 0
	}
	return t.u32(fn.rec, funcHeaderSize+4*int(i))
}

// funcdata returns the address of fn's i-th funcdata, if it has one.
func (t *GoPCLN) funcdata(fn goFunc, i uint8) (uint64, bool) {
	if i >= fn.rec[43] {
		return 0, false
	}
	off := t.u32(fn.rec, funcHeaderSize+4*int(t.u32(fn.rec, 28))+4*int(i))
	if off == ^uint32(0) {
		return 0, false
	}
	return t.gofunc + uint64(off), true
}

// pcvalue evaluates the pc-value table at off for targetpc in fn: -1 when
// there is no table or no value, as in the runtime.
func (t *GoPCLN) pcvalue(fn goFunc, off uint32, targetpc uint64) int32 {
	if off == 0 || uint64(off) >= uint64(len(t.pctab)) {
		return -1
	}
	p := t.pctab[off:]
	pc, val := fn.entry, int32(-1)
	for first := true; ; first = false {
		uv, n := binary.Uvarint(p)
		if n <= 0 || uv == 0 && !first {
			return -1
		}
		p = p[n:]
		val += int32(-(uint32(uv) & 1) ^ uint32(uv)>>1)
		pd, n := binary.Uvarint(p)
		if n <= 0 {
			return -1
		}
		p = p[n:]
		pc += pd * t.quantum
		if targetpc < pc {
			return val
		}
	}
}

func cstring(b []byte, off uint64) string {
	if off >= uint64(len(b)) {
		return ""
	}
	b = b[off:]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// fileLine returns the file and line of the instruction at pc in fn.
func (t *GoPCLN) fileLine(fn goFunc, pc uint64) (string, int) {
	fileno := t.pcvalue(fn, t.u32(fn.rec, 20), pc)
	line := t.pcvalue(fn, t.u32(fn.rec, 24), pc)
	file := ""
	if fileno >= 0 {
		i := uint64(t.u32(fn.rec, 32)) + uint64(fileno) // cuOffset + fileno
		if 4*i+4 <= uint64(len(t.cutab)) {
			if fo := t.u32(t.cutab, int(4*i)); fo != ^uint32(0) {
				file = cstring(t.filetab, uint64(fo))
			}
		}
	}
	return file, int(line)
}

// inlinedCall reads entry i of the inline tree at tree: the callee's name
// offset and the offset from the entry of an instruction at the call site.
func (t *GoPCLN) inlinedCall(tree uint64, i int32) (nameOff int32, parentPC int32, ok bool) {
	var b [inlinedCallSize]byte
	at := tree + uint64(i)*inlinedCallSize - t.funcSec.Addr
	if _, err := t.funcSec.ReadAt(b[:], int64(at)); err != nil {
		return 0, 0, false
	}
	return int32(t.order.Uint32(b[4:])), int32(t.order.Uint32(b[8:])), true
}

// GoFrame is one function level at an address: Line is -1 where the line
// table says the code is generated.
type GoFrame struct {
	Function, File string
	Line           int
}

// Lookup returns the frames at pc (a stated address), outermost first, and
// the function's bounds, following the inline tree the way the runtime's
// tracebacks do: the innermost frame has pc's file and line; each caller
// has those of its call site, an instruction at parentPc in the physical
// function.
func (t *GoPCLN) Lookup(pc uint64) (frames []GoFrame, entry, end uint64) {
	fn, ok := t.funcAt(pc)
	if !ok {
		return nil, 0, 0
	}
	tree, hasTree := uint64(0), false
	if t.funcSec != nil {
		tree, hasTree = t.funcdata(fn, funcdataInlTree)
	}
	inlIndex := t.pcdata(fn, pcdataInlTreeIndex)
	at := pc
	var seen []int32
	for {
		idx := int32(-1)
		if hasTree {
			idx = t.pcvalue(fn, inlIndex, at)
		}
		file, line := t.fileLine(fn, at)
		fr := GoFrame{File: file, Line: line}
		if idx >= 0 {
			if slices.Contains(seen, idx) || len(seen) == maxInlineDepth {
				// The call site leads back into the chain: it happens
				// when a function has no instruction of its own to
				// mark it with (a package's init made of inlined calls
				// only). Where in the outer function is unknown.
				fr = GoFrame{}
			} else if nameOff, parentPC, ok := t.inlinedCall(tree, idx); ok && parentPC >= 0 {
				seen = append(seen, idx)
				fr.Function = cstring(t.funcnames, uint64(nameOff))
				frames = append(frames, fr)
				at = fn.entry + uint64(parentPC)
				continue
			}
		}
		fr.Function = cstring(t.funcnames, uint64(int32(t.u32(fn.rec, 4))))
		frames = append(frames, fr)
		break
	}
	for i, j := 0, len(frames)-1; i < j; i, j = i+1, j-1 {
		frames[i], frames[j] = frames[j], frames[i]
	}
	return frames, fn.entry, fn.end
}

// Flags of a function (internal/abi.FuncFlag).
const (
	goFuncFlagTopFrame = 1 << 0 // the outermost frame of a stack: nothing called it
	goFuncFlagSPWrite  = 1 << 1 // writes SP in ways the SP-delta table does not follow
)

// GoFrameInfo is what unwinding needs of the function at a pc.
type GoFrameInfo struct {
	Entry uint64
	// SPDelta is how far SP is below its value at the function's entry
	// at the pc (the bytes the function pushed and allocated), so the
	// return address is at SP+SPDelta on amd64.
	SPDelta int64
	// Top says the function is the outermost of its stack (runtime.goexit,
	// mstart, rt0_go): it has no caller.
	Top bool
	// SPWrite says the function switches stacks or otherwise sets SP
	// itself (runtime.systemstack, morestack, gogo), so SPDelta does not
	// find its caller.
	SPWrite bool
}

// FrameInfo returns the frame layout at pc (a stated address), from the
// function's pc-to-SP-delta table, as the runtime's own traceback reads
// it; ok is false when pc is in no function or the table has no value.
func (t *GoPCLN) FrameInfo(pc uint64) (info GoFrameInfo, ok bool) {
	fn, ok := t.funcAt(pc)
	if !ok {
		return GoFrameInfo{}, false
	}
	d := t.pcvalue(fn, t.u32(fn.rec, 16), pc)
	if d < 0 {
		return GoFrameInfo{}, false
	}
	flag := fn.rec[41]
	return GoFrameInfo{
		Entry:   fn.entry,
		SPDelta: int64(d),
		Top:     flag&goFuncFlagTopFrame != 0,
		SPWrite: flag&goFuncFlagSPWrite != 0,
	}, true
}
