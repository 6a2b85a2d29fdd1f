package unwind

// x64 Windows unwinding from a PE image's .pdata (RUNTIME_FUNCTION
// entries) and the UNWIND_INFO records they point to, as RtlVirtualUnwind
// does it: a function's unwind codes undo its prologue, in reverse; a PC
// still in the prologue undoes only the codes already executed; a PC in an
// epilogue is unwound by simulating the rest of the epilogue from the
// code bytes; a PC with no RUNTIME_FUNCTION is a leaf whose return
// address is at RSP. Only RSP, RBP (the usual frame register) and RIP are
// tracked, which is what a return-address walk needs. arm64 .pdata is not
// read yet.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/gprof-dev/gprof/objfile"
)

// Unwind op codes (UNWIND_CODE.UnwindOp).
const (
	uwopPushNonvol     = 0
	uwopAllocLarge     = 1
	uwopAllocSmall     = 2
	uwopSetFPReg       = 3
	uwopSaveNonvol     = 4
	uwopSaveNonvolFar  = 5
	uwopEpilog         = 6
	uwopSpareCode      = 7
	uwopSaveXMM128     = 8
	uwopSaveXMM128Far  = 9
	uwopPushMachframe  = 10
	unwFlagChainInfo   = 4
	regRSP, regRBP     = 4, 5
	maxChain           = 32
	peRuntimeFuncBytes = 12
)

// PEImage holds the unwind tables of one x64 PE image, addressed by RVA.
type PEImage struct {
	funcs    []peFunc // sorted by begin
	sections []peSection
}

type peFunc struct{ begin, end, info uint32 }

type peSection struct {
	rva  uint32
	data []byte // raw data, zero-extended to the virtual size
}

// ErrNoPData says a PE image has no x64 exception table.
var ErrNoPData = errors.New("no x64 .pdata")

// NewPEImage reads the unwind tables of an x64 PE file: its exception
// table and the sections it points into, as objfile gives them.
func NewPEImage(f *objfile.File) (*PEImage, error) {
	if f.Format() != objfile.PE {
		return nil, fmt.Errorf("%s is not a PE file: %w", f.Path(), ErrNoPData)
	}
	if arch := f.Identity().Arch; arch != "x86_64" {
		return nil, fmt.Errorf("PE machine %s: %w", arch, ErrNoPData)
	}
	img := &PEImage{}
	for _, s := range f.PEMappedSections() {
		img.sections = append(img.sections, peSection{rva: s.RVA, data: s.Data})
	}
	rva, size, _ := f.PEExceptionTable()
	b := img.bytes(rva, size)
	if b == nil {
		return nil, ErrNoPData
	}
	for ; len(b) >= peRuntimeFuncBytes; b = b[peRuntimeFuncBytes:] {
		fn := peFunc{le32(b), le32(b[4:]), le32(b[8:])}
		if fn.begin == 0 && fn.end == 0 {
			continue
		}
		img.funcs = append(img.funcs, fn)
	}
	sort.Slice(img.funcs, func(i, j int) bool { return img.funcs[i].begin < img.funcs[j].begin })
	return img, nil
}

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// bytes returns n bytes of the image at rva, or nil.
func (img *PEImage) bytes(rva, n uint32) []byte {
	for _, s := range img.sections {
		if rva >= s.rva && uint64(rva-s.rva)+uint64(n) <= uint64(len(s.data)) {
			return s.data[rva-s.rva : rva-s.rva+n]
		}
	}
	return nil
}

// lookup returns the RUNTIME_FUNCTION containing rva.
func (img *PEImage) lookup(rva uint32) (peFunc, bool) {
	i := sort.Search(len(img.funcs), func(i int) bool { return img.funcs[i].begin > rva }) - 1
	if i >= 0 && rva < img.funcs[i].end {
		return img.funcs[i], true
	}
	return peFunc{}, false
}

// peFrame is the register state one step works on.
type peFrame struct {
	rip, rsp, rbp uint64
}

// step unwinds one frame of the function at f.rip, an address in this
// image loaded at base. read reads a stack word. It reports false when
// the frame cannot be unwound.
func (img *PEImage) step(base uint64, f *peFrame, leaf bool, read func(uint64) (uint64, bool)) bool {
	rva := uint32(f.rip - base)
	if !leaf {
		// A return address: look up the call instruction before it, so
		// a call at a function's end stays in that function. Only the
		// interrupted frame can be in an epilogue: x64 compilers put a
		// nop after a call an epilogue would follow.
		rva--
	}
	fn, ok := img.lookup(rva)
	if !ok {
		// A leaf function: no prologue, the return address is at RSP.
		ra, ok := read(f.rsp)
		if !ok {
			return false
		}
		f.rip, f.rsp = ra, f.rsp+8
		return true
	}
	if leaf && img.epilogue(rva, f, read) {
		return true
	}
	offset := rva - fn.begin
	machFrame := false
	for chain := 0; chain < maxChain; chain++ {
		hdr := img.bytes(fn.info, 4)
		if hdr == nil {
			return false
		}
		flags, count := hdr[0]>>3, uint32(hdr[2])
		frameReg, frameOff := hdr[3]&0xf, uint64(hdr[3]>>4)*16
		codes := img.bytes(fn.info+4, count*2)
		if codes == nil {
			return false
		}
		for i := uint32(0); i < count; {
			codeOff, op, info := codes[2*i], codes[2*i+1]&0xf, codes[2*i+1]>>4
			slots := uint32(1)
			switch op {
			case uwopAllocLarge:
				slots = 2
				if info != 0 {
					slots = 3
				}
			case uwopSaveNonvol, uwopSaveXMM128, uwopEpilog:
				slots = 2
			case uwopSaveNonvolFar, uwopSaveXMM128Far, uwopSpareCode:
				slots = 3
			}
			if i+slots > count {
				return false
			}
			arg := func(k uint32) uint32 { return uint32(binary.LittleEndian.Uint16(codes[2*(i+k):])) }
			// In the function's own (not a chained) record, codes for
			// prologue instructions not yet executed are skipped.
			if chain > 0 || uint32(codeOff) <= offset {
				switch op {
				case uwopPushNonvol:
					if info == regRBP {
						v, ok := read(f.rsp)
						if !ok {
							return false
						}
						f.rbp = v
					}
					f.rsp += 8
				case uwopAllocLarge:
					if info == 0 {
						f.rsp += uint64(arg(1)) * 8
					} else {
						f.rsp += uint64(arg(1)) | uint64(arg(2))<<16
					}
				case uwopAllocSmall:
					f.rsp += uint64(info)*8 + 8
				case uwopSetFPReg:
					if frameReg != regRBP {
						return false // only RBP is tracked
					}
					f.rsp = f.rbp - frameOff
				case uwopSaveNonvol, uwopSaveNonvolFar:
					if info == regRBP {
						off := uint64(arg(1)) * 8
						if op == uwopSaveNonvolFar {
							off = uint64(arg(1)) | uint64(arg(2))<<16
						}
						v, ok := read(f.rsp + off)
						if !ok {
							return false
						}
						f.rbp = v
					}
				case uwopPushMachframe:
					sp := f.rsp
					if info != 0 {
						sp += 8 // an error code
					}
					rip, ok1 := read(sp)
					rsp, ok2 := read(sp + 24)
					if !ok1 || !ok2 {
						return false
					}
					f.rip, f.rsp = rip, rsp
					machFrame = true
				}
			}
			i += slots
		}
		if flags&unwFlagChainInfo == 0 {
			break
		}
		c := img.bytes(fn.info+4+(count+count&1)*2, peRuntimeFuncBytes)
		if c == nil {
			return false
		}
		fn = peFunc{le32(c), le32(c[4:]), le32(c[8:])}
	}
	if machFrame {
		return true
	}
	ra, ok := read(f.rsp)
	if !ok {
		return false
	}
	f.rip, f.rsp = ra, f.rsp+8
	return true
}

// epilogue unwinds f when rva is in an epilogue, which x64 code may only
// shape as: an optional "add rsp, N" or "lea rsp, [rbp+N]", pops of
// nonvolatile registers, then ret (or a jmp to a tail call). It reports
// false, having changed nothing, when the code at rva is not that.
func (img *PEImage) epilogue(rva uint32, f *peFrame, read func(uint64) (uint64, bool)) bool {
	code := img.bytes(rva, 64)
	if code == nil {
		// Near a section's end: take what there is.
		for n := uint32(63); n > 0 && code == nil; n-- {
			code = img.bytes(rva, n)
		}
	}
	g := *f
	i := 0
	switch {
	case len(code) >= 4 && code[0] == 0x48 && code[1] == 0x83 && code[2] == 0xc4: // add rsp, imm8
		g.rsp += uint64(int64(int8(code[3])))
		i = 4
	case len(code) >= 7 && code[0] == 0x48 && code[1] == 0x81 && code[2] == 0xc4: // add rsp, imm32
		g.rsp += uint64(int64(int32(le32(code[3:]))))
		i = 7
	case len(code) >= 4 && code[0] == 0x48 && code[1] == 0x8d && code[2] == 0x65: // lea rsp, [rbp+disp8]
		g.rsp = g.rbp + uint64(int64(int8(code[3])))
		i = 4
	case len(code) >= 7 && code[0] == 0x48 && code[1] == 0x8d && code[2] == 0xa5: // lea rsp, [rbp+disp32]
		g.rsp = g.rbp + uint64(int64(int32(le32(code[3:]))))
		i = 7
	}
	for i < len(code) {
		c := code[i]
		switch {
		case c >= 0x58 && c <= 0x5f: // pop r64
			if c == 0x58+regRBP {
				v, ok := read(g.rsp)
				if !ok {
					return false
				}
				g.rbp = v
			}
			g.rsp += 8
			i++
			continue
		case c == 0x41 && i+1 < len(code) && code[i+1] >= 0x58 && code[i+1] <= 0x5f: // pop r8..r15
			g.rsp += 8
			i += 2
			continue
		case c == 0xc3, c == 0xf3 && i+1 < len(code) && code[i+1] == 0xc3, c == 0xe9, c == 0xeb:
			// ret, rep ret, or a jmp ending the epilogue.
			if c == 0xe9 || c == 0xeb {
				if i == 0 {
					return false // a jmp alone is just a jmp
				}
			}
		default:
			return false
		}
		break
	}
	if i >= len(code) {
		return false
	}
	ra, ok := read(g.rsp)
	if !ok {
		return false
	}
	g.rip, g.rsp = ra, g.rsp+8
	*f = g
	return true
}

// PEModule is a loaded PE image: where it is and its tables (nil when the
// image has none; its frames are then unwound as leaves).
type PEModule struct {
	Base, End uint64
	Image     *PEImage
}

// UnwindPE appends to out regs.IP and then the return addresses of the
// calling frames, unwound with the tables of mods (sorted by Base) over a
// stack copy taken at regs.SP. It stops at a return address outside
// every module, at the end of the copy, or after max frames.
func UnwindPE(mods []PEModule, regs Regs, stack []byte, max int, out []uint64) []uint64 {
	if max <= 0 {
		max = DefaultMaxFrames
	}
	sp0 := regs.SP
	read := func(addr uint64) (uint64, bool) {
		if addr < sp0 || addr-sp0 > uint64(len(stack)) || uint64(len(stack))-(addr-sp0) < 8 {
			return 0, false
		}
		return binary.LittleEndian.Uint64(stack[addr-sp0:]), true
	}
	find := func(pc uint64) *PEModule {
		i := sort.Search(len(mods), func(i int) bool { return mods[i].End > pc })
		if i < len(mods) && mods[i].Base <= pc {
			return &mods[i]
		}
		return nil
	}
	f := peFrame{rip: regs.IP, rsp: regs.SP, rbp: regs.FP}
	out = append(out, f.rip)
	for n := 1; n < max; n++ {
		m := find(f.rip)
		if m == nil {
			break
		}
		img := m.Image
		if img == nil {
			img = &PEImage{}
		}
		prev := f.rsp
		if !img.step(m.Base, &f, n == 1, read) {
			break
		}
		if f.rip == 0 || f.rsp <= prev || find(f.rip) == nil {
			break
		}
		out = append(out, f.rip)
	}
	return out
}
