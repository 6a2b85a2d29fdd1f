package unwind

import (
	"encoding/binary"
	"errors"
	"sort"
)

// This file reads DWARF call frame information (.eh_frame, .eh_frame_hdr and
// .debug_frame) and compiles the row for one PC into a rule. Nothing here
// allocates once a section is loaded: CIEs and FDEs are decoded into values
// on the stack and instruction streams are sub-slices of the section.

// Pointer encodings (DW_EH_PE_*) used by .eh_frame and .eh_frame_hdr.
const (
	peAbsptr  = 0x00
	peUleb128 = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSleb128 = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c
	pePcrel   = 0x10
	peDatarel = 0x30
	peOmit    = 0xff
)

var errCFI = errors.New("malformed call frame information")

// reader decodes a byte slice without allocating; a read past the end sets
// bad and yields zeros, so callers check once at the end of a record.
type reader struct {
	b   []byte
	off int
	bad bool
}

func (r *reader) u8() uint8 {
	if r.off >= len(r.b) {
		r.bad = true
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *reader) u16() uint16 {
	if r.off+2 > len(r.b) {
		r.bad = true
		return 0
	}
	v := binary.LittleEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v
}

func (r *reader) u32() uint32 {
	if r.off+4 > len(r.b) {
		r.bad = true
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *reader) u64() uint64 {
	if r.off+8 > len(r.b) {
		r.bad = true
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

// skip advances past n bytes, or sets bad if fewer remain.
func (r *reader) skip(n uint64) {
	if n > uint64(len(r.b)-r.off) {
		r.bad = true
		r.off = len(r.b)
		return
	}
	r.off += int(n)
}

func (r *reader) uleb() uint64 {
	var v uint64
	var shift uint
	for {
		c := r.u8()
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 || r.bad {
			return v
		}
	}
}

func (r *reader) sleb() int64 {
	var v int64
	var shift uint
	var c byte
	for {
		c = r.u8()
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 || r.bad {
			break
		}
	}
	if shift < 64 && c&0x40 != 0 {
		v |= -1 << shift
	}
	return v
}

// ptr decodes a pointer in encoding enc. base is the virtual address of
// r.b[0], for pc-relative encodings; data is the base of datarel ones.
func (r *reader) ptr(enc byte, base, data uint64) uint64 {
	if enc == peOmit {
		return 0
	}
	at := base + uint64(r.off)
	var v uint64
	switch enc & 0x0f {
	case peAbsptr, peUdata8, peSdata8:
		v = r.u64()
	case peUleb128:
		v = r.uleb()
	case peUdata2:
		v = uint64(r.u16())
	case peUdata4:
		v = uint64(r.u32())
	case peSleb128:
		v = uint64(r.sleb())
	case peSdata2:
		v = uint64(int64(int16(r.u16())))
	case peSdata4:
		v = uint64(int64(int32(r.u32())))
	default:
		r.bad = true
		return 0
	}
	switch enc & 0x70 {
	case 0:
	case pePcrel:
		v += at
	case peDatarel:
		v += data
	default:
		// textrel and funcrel do not occur on the targets we read.
		r.bad = true
	}
	// Indirect pointers (0x80) only appear for personality routines, which
	// unwinding never needs, so the address itself is returned.
	return v
}

// cfiSection is one loaded .eh_frame or .debug_frame with an index from PC
// to FDE: either the .eh_frame_hdr search table, or one built at load time.
type cfiSection struct {
	data []byte
	addr uint64 // virtual address of data[0]; 0 for .debug_frame
	eh   bool   // .eh_frame encoding (CIE id 0, relative CIE pointers)

	// .eh_frame_hdr table of (initial location, FDE address) as
	// datarel|sdata4 pairs, the only encoding linkers emit.
	hdr     []byte
	hdrAddr uint64

	index []fdeEntry // sorted by start, when there is no usable hdr
}

type fdeEntry struct {
	start, end uint64
	off        uint32
}

// cie is the decoded part of a CIE that evaluating a row needs.
type cie struct {
	codeAlign uint64
	dataAlign int64
	raReg     uint64
	fdeEnc    byte
	signal    bool
	aug       bool // has augmentation data ('z')
	initial   []byte
}

// fde is a decoded FDE.
type fde struct {
	cie        cie
	start, end uint64
	insns      []byte
}

// record reads an initial length at off and returns the record's body
// bounds. A zero length is a terminator.
func (s *cfiSection) record(off int) (body, next int, err error) {
	r := reader{b: s.data, off: off}
	n := uint64(r.u32())
	if n == 0xffffffff {
		n = r.u64()
	}
	if r.bad || n > uint64(len(s.data)-r.off) {
		return 0, 0, errCFI
	}
	return r.off, r.off + int(n), nil
}

// parseCIE decodes the CIE at off.
func (s *cfiSection) parseCIE(off int, c *cie) error {
	body, end, err := s.record(off)
	if err != nil {
		return err
	}
	r := reader{b: s.data[:end], off: body}
	if s.eh {
		if r.u32() != 0 {
			return errCFI
		}
	} else if id := r.u32(); id != 0xffffffff {
		return errCFI
	}
	version := r.u8()
	augStart := r.off
	for r.off < end && s.data[r.off] != 0 {
		r.off++
	}
	aug := s.data[augStart:r.off]
	r.off++
	if len(aug) >= 2 && aug[0] == 'e' && aug[1] == 'h' {
		r.u64() // pre-z GCC pointer to exception table
	}
	if version >= 4 {
		r.u8() // address_size
		r.u8() // segment_selector_size
	}
	*c = cie{fdeEnc: peAbsptr}
	c.codeAlign = r.uleb()
	c.dataAlign = r.sleb()
	if version == 1 {
		c.raReg = uint64(r.u8())
	} else {
		c.raReg = r.uleb()
	}
	if len(aug) > 0 && aug[0] == 'z' {
		c.aug = true
		n := r.uleb()
		augEnd := r.off + int(n)
		if augEnd > end || n > uint64(end) {
			return errCFI
		}
		for _, a := range aug[1:] {
			switch a {
			case 'R':
				c.fdeEnc = r.u8()
			case 'L':
				r.u8()
			case 'P':
				enc := r.u8()
				r.ptr(enc&^0x80, s.addr, 0)
			case 'S':
				c.signal = true
			}
			// Other letters ('B', 'G', ...) carry no data we need; the
			// augmentation length lets us skip whatever they hold.
		}
		r.off = augEnd
	}
	if r.bad || r.off > end {
		return errCFI
	}
	c.initial = s.data[r.off:end]
	return nil
}

// parseFDE decodes the FDE at off, or reports isCIE for a CIE there.
func (s *cfiSection) parseFDE(off int, f *fde) (isCIE bool, err error) {
	body, end, err := s.record(off)
	if err != nil {
		return false, err
	}
	r := reader{b: s.data[:end], off: body}
	id := r.u32()
	var cieOff int
	if s.eh {
		if id == 0 {
			return true, nil
		}
		cieOff = body - int(id)
	} else {
		if id == 0xffffffff {
			return true, nil
		}
		cieOff = int(id)
	}
	if cieOff < 0 || cieOff >= len(s.data) {
		return false, errCFI
	}
	if err := s.parseCIE(cieOff, &f.cie); err != nil {
		return false, err
	}
	enc := f.cie.fdeEnc
	if !s.eh {
		enc = peUdata8
	}
	f.start = r.ptr(enc, s.addr, 0)
	f.end = f.start + r.ptr(enc&0x0f, s.addr, 0)
	if f.cie.aug {
		r.skip(r.uleb())
	}
	if r.bad || r.off > end {
		return false, errCFI
	}
	f.insns = s.data[r.off:end]
	return false, nil
}

// buildIndex walks every record once; used for .debug_frame (which has no
// index) and for an .eh_frame without a usable .eh_frame_hdr.
func (s *cfiSection) buildIndex() {
	var idx []fdeEntry
	for off := 0; off+4 <= len(s.data); {
		_, next, err := s.record(off)
		if err != nil {
			break
		}
		if next == off+4 && s.eh {
			break // .eh_frame terminator
		}
		var f fde
		isCIE, err := s.parseFDE(off, &f)
		if err == nil && !isCIE && f.end > f.start && off <= 0xffffffff {
			idx = append(idx, fdeEntry{f.start, f.end, uint32(off)})
		}
		off = next
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i].start < idx[j].start })
	s.index = idx
}

// setHdr installs an .eh_frame_hdr search table if it has the usual
// encoding, and reports whether it did.
func (s *cfiSection) setHdr(hdr []byte, addr uint64) bool {
	if len(hdr) < 4 || hdr[0] != 1 {
		return false
	}
	r := reader{b: hdr, off: 4}
	r.ptr(hdr[1], addr, addr)
	count := r.ptr(hdr[2], addr, addr)
	if r.bad || hdr[3] != peDatarel|peSdata4 || hdr[2] == peOmit {
		return false
	}
	if count > uint64(len(hdr)-r.off)/8 {
		return false
	}
	s.hdr = hdr[r.off : r.off+int(count)*8]
	s.hdrAddr = addr
	return true
}

// find locates the FDE covering pc (a link-time virtual address).
func (s *cfiSection) find(pc uint64, f *fde) bool {
	var off int
	switch {
	case s.hdr != nil:
		n := len(s.hdr) / 8
		// The table is sorted by initial location: take the last entry
		// that starts at or before pc.
		i := sort.Search(n, func(i int) bool {
			return s.hdrAddr+uint64(int64(int32(binary.LittleEndian.Uint32(s.hdr[i*8:])))) > pc
		})
		if i == 0 {
			return false
		}
		a := s.hdrAddr + uint64(int64(int32(binary.LittleEndian.Uint32(s.hdr[(i-1)*8+4:]))))
		if a < s.addr || a-s.addr >= uint64(len(s.data)) {
			return false
		}
		off = int(a - s.addr)
	case s.index != nil:
		i := sort.Search(len(s.index), func(i int) bool { return s.index[i].start > pc })
		if i == 0 || s.index[i-1].end <= pc {
			return false
		}
		off = int(s.index[i-1].off)
	default:
		return false
	}
	isCIE, err := s.parseFDE(off, f)
	return err == nil && !isCIE && f.start <= pc && pc < f.end
}

// Register rule kinds, for the CFA and for each register we track.
const (
	ruleUnset   = iota // no rule: same value for registers, none for CFA
	ruleSame           // same value
	ruleUndef          // undefined: for the return address, outermost frame
	ruleOffset         // saved at CFA+off
	ruleValOff         // value is CFA+off
	ruleReg            // value is in register reg (CFA: reg+off)
	ruleExpr           // saved at the address an expression computes
	ruleValExpr        // value is what an expression computes
	rulePLT            // CFA = rsp+8 + ((rip&15) >= off)*8, the x86-64 PLT idiom
)

// regRule is how to recover one value. For expression kinds off is the
// expression's offset in the section and n its length.
type regRule struct {
	kind uint8
	reg  uint8
	n    uint16
	off  int32
}

// Rule flags.
const (
	flagNoCFI  = 1 << iota // PC has no CFI: fall back to frame pointers
	flagSignal             // signal trampoline: the caller's PC is exact
	flagDebug              // expressions live in .debug_frame, not .eh_frame
	flagBad                // CFI exists but uses something we cannot evaluate
)

// rule is a compiled CFI row reduced to the values an unwinder recovers:
// the CFA, the return address, the frame pointer, the stack pointer and,
// on x86-64, rbx.
type rule struct {
	flags uint8
	cfa   regRule
	ra    regRule
	fp    regRule
	sp    regRule
	bx    regRule
}

// Tracked register slots, and the DWARF numbers that name them per arch.
const (
	slotPC = iota
	slotSP
	slotFP
	slotLR
	// slotBX is x86-64's rbx. Compiled code keeps its CFA in rsp or rbp,
	// but hand-written code may not: glibc's lazy-binding trampoline
	// (_dl_runtime_resolve_*) realigns rsp and keeps its CFA in rbx, so
	// every first call through a PLT slot needs rbx to be unwound.
	slotBX
	numSlots
	slotNone = 0xff
)

type arch uint8

const (
	archAMD64 arch = iota + 1
	archARM64
)

// slot maps a DWARF register number to a tracked slot.
func (a arch) slot(reg uint64) uint8 {
	switch a {
	case archAMD64:
		switch reg {
		case 7:
			return slotSP
		case 6:
			return slotFP
		case 3:
			return slotBX
		case 16:
			return slotPC // rip, for DW_OP_breg16 in PLT expressions
		}
	case archARM64:
		switch reg {
		case 31:
			return slotSP
		case 29:
			return slotFP
		case 30:
			return slotLR
		}
	}
	return slotNone
}

// row is the state of the CFI machine for the columns we track.
type row struct {
	cfa      regRule
	ra       regRule
	fp, sp   regRule
	bx       regRule
	raSigned bool // arm64 pointer authentication state, ignored for now
}

// evalRow runs f's CIE and FDE programs up to pc and compiles the row.
func (s *cfiSection) evalRow(a arch, f *fde, pc uint64, out *rule) bool {
	var cur row
	if !s.exec(a, f, f.cie.initial, ^uint64(0), &cur, nil) {
		return false
	}
	init := cur
	if !s.exec(a, f, f.insns, pc, &cur, &init) {
		return false
	}
	*out = rule{cfa: cur.cfa, ra: cur.ra, fp: cur.fp, sp: cur.sp, bx: cur.bx}
	if f.cie.signal {
		out.flags |= flagSignal
	}
	if !s.eh {
		out.flags |= flagDebug
	}
	if cur.cfa.kind == ruleUnset {
		out.flags |= flagBad
	}
	// Recognize the PLT's CFA expression and compile it into a direct
	// rule: rsp+8 + ((rip&15) >= k)<<3, as emitted by binutils.
	if cur.cfa.kind == ruleExpr && a == archAMD64 {
		e := s.expr(cur.cfa)
		if len(e) == 11 && e[0] == 0x77 && e[1] == 8 && e[2] == 0x80 && e[3] == 0 &&
			e[4] == 0x3f && e[5] == 0x1a && e[6] >= 0x30 && e[6] < 0x50 &&
			e[7] == 0x2a && e[8] == 0x33 && e[9] == 0x24 && e[10] == 0x22 {
			out.cfa = regRule{kind: rulePLT, off: int32(e[6] - 0x30)}
		}
	}
	return true
}

// exec runs CFA instructions, stopping before the first row past pc.
// init is the row after the CIE's program, for DW_CFA_restore; nil while
// running the CIE's own program.
func (s *cfiSection) exec(a arch, f *fde, insns []byte, pc uint64, cur, init *row) bool {
	var stack [8]row
	depth := 0
	loc := f.start
	r := reader{b: insns}
	insnOff := func() int32 { return int32(s.offsetOf(insns) + r.off) }
	ca, da := f.cie.codeAlign, f.cie.dataAlign
	set := func(reg uint64, rr regRule) {
		switch {
		case reg == f.cie.raReg:
			cur.ra = rr
		case a.slot(reg) == slotFP:
			cur.fp = rr
		case a.slot(reg) == slotSP:
			cur.sp = rr
		case a.slot(reg) == slotBX:
			cur.bx = rr
		}
	}
	restore := func(reg uint64) {
		if init == nil {
			set(reg, regRule{})
			return
		}
		switch {
		case reg == f.cie.raReg:
			cur.ra = init.ra
		case a.slot(reg) == slotFP:
			cur.fp = init.fp
		case a.slot(reg) == slotSP:
			cur.sp = init.sp
		case a.slot(reg) == slotBX:
			cur.bx = init.bx
		}
	}
	for r.off < len(r.b) {
		op := r.u8()
		switch op >> 6 {
		case 1: // DW_CFA_advance_loc
			loc += uint64(op&0x3f) * ca
			if loc > pc {
				return true
			}
			continue
		case 2: // DW_CFA_offset
			set(uint64(op&0x3f), regRule{kind: ruleOffset, off: int32(int64(r.uleb()) * da)})
			continue
		case 3: // DW_CFA_restore
			restore(uint64(op & 0x3f))
			continue
		}
		switch op {
		case 0x00: // nop
		case 0x01: // set_loc
			enc := f.cie.fdeEnc
			if !s.eh {
				enc = peUdata8
			}
			loc = r.ptr(enc, s.addr+uint64(s.offsetOf(insns)), 0)
			if loc > pc {
				return true
			}
		case 0x02, 0x03, 0x04: // advance_loc1/2/4
			var d uint64
			switch op {
			case 0x02:
				d = uint64(r.u8())
			case 0x03:
				d = uint64(r.u16())
			default:
				d = uint64(r.u32())
			}
			loc += d * ca
			if loc > pc {
				return true
			}
		case 0x05: // offset_extended
			reg := r.uleb()
			set(reg, regRule{kind: ruleOffset, off: int32(int64(r.uleb()) * da)})
		case 0x06: // restore_extended
			restore(r.uleb())
		case 0x07: // undefined
			set(r.uleb(), regRule{kind: ruleUndef})
		case 0x08: // same_value
			set(r.uleb(), regRule{kind: ruleSame})
		case 0x09: // register
			reg, reg2 := r.uleb(), r.uleb()
			sl := a.slot(reg2)
			if sl == slotNone {
				set(reg, regRule{kind: ruleUndef})
			} else {
				set(reg, regRule{kind: ruleReg, reg: sl})
			}
		case 0x0a: // remember_state
			if depth == len(stack) {
				return false
			}
			stack[depth] = *cur
			depth++
		case 0x0b: // restore_state
			if depth == 0 {
				return false
			}
			depth--
			*cur = stack[depth]
		case 0x0c: // def_cfa
			reg := r.uleb()
			cur.cfa = regRule{kind: ruleReg, reg: a.slot(reg), off: int32(r.uleb())}
		case 0x0d: // def_cfa_register
			cur.cfa.kind = ruleReg
			cur.cfa.reg = a.slot(r.uleb())
		case 0x0e: // def_cfa_offset
			cur.cfa.off = int32(r.uleb())
		case 0x0f: // def_cfa_expression
			n := r.uleb()
			if n > 0xffff {
				return false
			}
			cur.cfa = regRule{kind: ruleExpr, off: insnOff(), n: uint16(n)}
			r.skip(n)
		case 0x10, 0x16: // expression, val_expression
			reg := r.uleb()
			n := r.uleb()
			if n > 0xffff {
				return false
			}
			k := uint8(ruleExpr)
			if op == 0x16 {
				k = ruleValExpr
			}
			set(reg, regRule{kind: k, off: insnOff(), n: uint16(n)})
			r.skip(n)
		case 0x11: // offset_extended_sf
			reg := r.uleb()
			set(reg, regRule{kind: ruleOffset, off: int32(r.sleb() * da)})
		case 0x12: // def_cfa_sf
			reg := r.uleb()
			cur.cfa = regRule{kind: ruleReg, reg: a.slot(reg), off: int32(r.sleb() * da)}
		case 0x13: // def_cfa_offset_sf
			cur.cfa.off = int32(r.sleb() * da)
		case 0x14: // val_offset
			reg := r.uleb()
			set(reg, regRule{kind: ruleValOff, off: int32(int64(r.uleb()) * da)})
		case 0x15: // val_offset_sf
			reg := r.uleb()
			set(reg, regRule{kind: ruleValOff, off: int32(r.sleb() * da)})
		case 0x2d: // GNU_window_save; on arm64 AARCH64_negate_ra_state
			cur.raSigned = !cur.raSigned
		case 0x2e: // GNU_args_size
			r.uleb()
		case 0x2f: // GNU_negative_offset_extended
			reg := r.uleb()
			set(reg, regRule{kind: ruleOffset, off: int32(-int64(r.uleb()) * da)})
		default:
			return false
		}
		if r.bad {
			return false
		}
	}
	return !r.bad
}

// offsetOf returns the offset of b[0] within s.data; b must be a
// sub-slice of it.
func (s *cfiSection) offsetOf(b []byte) int {
	return cap(s.data) - cap(b)
}
