// Package unwind turns a thread's registers and a view of its stack into a
// list of return addresses, using DWARF call frame information (.eh_frame,
// .eh_frame_hdr, .debug_frame) where a binary has it and frame pointers
// where it does not.
//
// A recorder keeps one AddressSpace per process, fed from mapping events,
// and one Unwinder for the whole recording. The Unwinder caches each
// binary's unwind tables (keyed by device and inode, so processes share
// them) and a memo of compiled rules per PC; after warm-up, unwinding a
// sample allocates nothing.
//
// Each frame is unwound by the CFI row for its PC (return addresses are
// looked up at PC-1, so a call at a function's end stays in it), or, when
// the PC has no CFI, by the frame-pointer chain. A walk stops at an
// undefined return address (_start, clone3), a zero return address or
// frame pointer, a return address outside every mapping, a stack pointer
// that does not grow toward the caller, or memory it cannot read.
//
// x86-64 is complete and tested against gdb. The arm64 rules (SP, x29,
// x30, LR for leaves, pointer authentication bits masked) are written but
// not yet tested on arm64 binaries.
//
// Signal frames are unwound through the CFI that glibc gives its
// __restore_rt trampoline (an 'S' CIE whose rules read the saved registers
// from the ucontext), and, when a trampoline has no CFI, by recognizing the
// x86-64 rt_sigreturn instruction sequence and reading the ucontext
// directly. The vdso is unwound with the CFI of gprof's own vdso, which is
// the same image the kernel maps into every process.
package unwind

import (
	"encoding/binary"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/gprof-dev/gprof/internal/vdso"
)

// Regs are the registers unwinding starts from. The shape matches
// event.Regs, so one converts to the other.
type Regs struct {
	IP, SP, FP uint64
	LR         uint64 // arm64 only
	BX         uint64 // x86-64 only; 0 when the backend did not capture it
}

// Mapping is an executable mapping of a file into a process.
type Mapping struct {
	Start, End, FileOffset uint64
	// Path opens the mapped file (it may be /proc/PID/map_files/...).
	// "[vdso]" names the vdso; other bracketed names and "" have no file
	// and are unwound with frame pointers.
	Path string
	// Dev and Inode identify the file when known (Dev encoded as stat's
	// st_dev); otherwise Path is stat'ed when the mapping is first used.
	// They key the Unwinder's cache, so processes share a binary's tables.
	Dev, Inode uint64
}

// AddressSpace is the set of executable mappings of one process. It is not
// safe for concurrent use, and must not change during an Unwind that uses
// it. Unwinding records which module each mapping resolved to, so an
// AddressSpace must be used with one Unwinder only.
type AddressSpace struct {
	maps []asMapping // sorted by Start, non-overlapping
	jit  jitTable
}

type asMapping struct {
	Mapping
	resolved bool
	mod      *module // nil: no CFI, frame pointers only
	bias     uint64
}

// Add adds m, replacing whatever part of existing mappings it overlaps, as
// mmap does.
func (as *AddressSpace) Add(m Mapping) {
	if m.End <= m.Start {
		return
	}
	as.Remove(m.Start, m.End)
	i := sort.Search(len(as.maps), func(i int) bool { return as.maps[i].Start >= m.Start })
	as.maps = append(as.maps, asMapping{})
	copy(as.maps[i+1:], as.maps[i:])
	as.maps[i] = asMapping{Mapping: m}
}

// Remove removes the address range [start, end), splitting mappings that
// straddle its ends, as munmap does.
func (as *AddressSpace) Remove(start, end uint64) {
	if end <= start {
		return
	}
	out := as.maps[:0:0]
	for _, m := range as.maps {
		if m.End <= start || m.Start >= end {
			out = append(out, m)
			continue
		}
		if m.Start < start {
			l := m
			l.End = start
			out = append(out, l)
		}
		if m.End > end {
			r := m
			r.FileOffset += end - m.Start
			r.Start = end
			r.bias = m.bias // the file is mapped at the same bias
			out = append(out, r)
		}
	}
	as.maps = out
}

// Lookup returns the mapping containing addr.
func (as *AddressSpace) Lookup(addr uint64) (Mapping, bool) {
	if m := as.find(addr); m != nil {
		return m.Mapping, true
	}
	return Mapping{}, false
}

// Mappings returns the mappings in address order.
func (as *AddressSpace) Mappings() []Mapping {
	out := make([]Mapping, len(as.maps))
	for i := range as.maps {
		out[i] = as.maps[i].Mapping
	}
	return out
}

func (as *AddressSpace) find(addr uint64) *asMapping {
	ms := as.maps
	lo, hi := 0, len(ms)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if ms[mid].End <= addr {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(ms) && ms[lo].Start <= addr {
		return &ms[lo]
	}
	return nil
}

// ReadMemory reads len(p) bytes of the target's memory at addr and reports
// whether all of them could be read. A ptrace backend implements it with
// process_vm_readv.
type ReadMemory func(p []byte, addr uint64) bool

// DefaultMaxFrames bounds a stack when Unwinder.MaxFrames is zero.
const DefaultMaxFrames = 512

// Unwinder unwinds stacks. It is safe for concurrent use; calls are
// serialized, as a recorder unwinds from one goroutine anyway.
type Unwinder struct {
	// MaxFrames bounds the number of addresses one call appends.
	MaxFrames int

	mu     sync.Mutex
	arch   arch // of the host, for frames in no known binary
	mods   map[modKey]*module
	nextID uint32
	memo   *[memoSize]memoEntry
	buf    [8]byte // for ReadMemory, so the slice passed does not escape per call

	// Stats, for tests and diagnostics.
	memoHits, memoMisses uint64
}

type modKey struct {
	dev, ino uint64
	path     string
}

const memoBits = 14
const memoSize = 1 << memoBits

// memoEntry caches the compiled rule for one (module, PC) pair. The PC key
// is shifted left one bit with the exact bit at the bottom.
type memoEntry struct {
	key uint64
	mod uint32
	r   rule
}

// New returns an Unwinder with an empty cache.
func New() *Unwinder {
	u := &Unwinder{mods: make(map[modKey]*module), memo: new([memoSize]memoEntry), arch: archAMD64}
	if runtime.GOARCH == "arm64" {
		u.arch = archARM64
	}
	return u
}

// Close releases the cached binaries, which are memory-mapped. Neither the
// Unwinder nor any AddressSpace it unwound may be used after.
func (u *Unwinder) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	var err error
	for k, m := range u.mods {
		if m != nil {
			if e := m.close(); e != nil && err == nil {
				err = e
			}
		}
		delete(u.mods, k)
	}
	return err
}

// Unwind appends to out the IP of regs and then the return addresses of
// the calling frames, outermost last. Memory is read only from stack,
// which holds the bytes at regs.SP onward. It stops at the outermost frame,
// at the end of the stack copy, or at the first implausible frame.
func (u *Unwinder) Unwind(as *AddressSpace, regs Regs, stack []byte, out []uint64) []uint64 {
	return u.UnwindMemory(as, regs, stack, nil, out)
}

// UnwindCopy is Unwind, and also reports whether the stack ended because
// a frame needed a word just past the end of the copy: a longer copy
// would have gone on.
func (u *Unwinder) UnwindCopy(as *AddressSpace, regs Regs, stack []byte, out []uint64) (frames []uint64, cutShort bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	mem := memory{sp: regs.SP, stack: stack, buf: &u.buf}
	out = u.unwind(as, regs, &mem, out)
	return out, mem.past && !mem.done
}

// UnwindMemory is Unwind for a live (stopped) process: words outside stack
// are read with read. stack may be empty; a caller that can copy a chunk
// of stack at SP in one call should, since read is called once per word.
func (u *Unwinder) UnwindMemory(as *AddressSpace, regs Regs, stack []byte, read ReadMemory, out []uint64) []uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	mem := memory{sp: regs.SP, stack: stack, read: read, buf: &u.buf}
	return u.unwind(as, regs, &mem, out)
}

// memory reads target words, from the stack copy first.
type memory struct {
	sp    uint64
	stack []byte
	read  ReadMemory
	buf   *[8]byte
	// past is set when a word just past the end of the copy (within
	// pastSlack) could not be read; done when the unwinder reached the
	// outermost frame or its frame limit, so the copy's end did not matter.
	past, done bool
}

// pastSlack is how far past a stack copy's end a word counts as the next
// frames' rather than garbage: deep frames are rarely larger.
const pastSlack = 64 << 10

func (m *memory) u64(addr uint64) (uint64, bool) {
	if off := addr - m.sp; addr >= m.sp && off < uint64(len(m.stack)) && uint64(len(m.stack))-off >= 8 {
		return binary.LittleEndian.Uint64(m.stack[off:]), true
	}
	if m.read != nil && m.read(m.buf[:], addr) {
		return binary.LittleEndian.Uint64(m.buf[:]), true
	}
	if end := m.sp + uint64(len(m.stack)); len(m.stack) > 0 && addr+8 > end && addr < end+pastSlack {
		m.past = true
	}
	return 0, false
}

// state is the unwinder's view of one frame's registers.
type state struct {
	r     [numSlots]uint64
	valid uint8 // bit per slot
}

func (s *state) set(slot uint8, v uint64) {
	s.r[slot] = v
	s.valid |= 1 << slot
}

func (s *state) has(slot uint8) bool { return s.valid&(1<<slot) != 0 }

func (u *Unwinder) unwind(as *AddressSpace, regs Regs, mem *memory, out []uint64) []uint64 {
	max := u.MaxFrames
	if max <= 0 {
		max = DefaultMaxFrames
	}
	var st state
	st.set(slotPC, regs.IP)
	st.set(slotSP, regs.SP)
	st.set(slotFP, regs.FP)
	if regs.LR != 0 {
		st.set(slotLR, regs.LR)
	}
	if regs.BX != 0 {
		st.set(slotBX, regs.BX)
	}
	out = append(out, regs.IP)
	exact := true
	m := as.find(regs.IP)
	var next state
	mem.done = true // unless a step fails below
	for n := 1; n < max; n++ {
		next = state{}
		mem.past = false
		if !u.step(as, m, &st, mem, exact, &next) {
			mem.done = false
			break
		}
		pc := next.r[slotPC]
		exact = next.valid&exactBit != 0
		next.valid &^= exactBit
		if exact {
			m = as.find(pc)
		} else {
			m = as.find(pc - 1)
		}
		if m == nil && as.jit.at(pc, exact) == nil || pc == 0 {
			break // a return address outside any mapping is garbage
		}
		out = append(out, pc)
		st = next
	}
	return out
}

// exactBit marks, in a returned state, that the next PC was interrupted
// rather than returned to (the frame below was a signal frame).
const exactBit = 1 << 7

// step recovers the caller's registers from st, the frame at st's PC in
// mapping m (nil if unmapped) of as.
func (u *Unwinder) step(as *AddressSpace, m *asMapping, st *state, mem *memory, exact bool, next *state) bool {
	pc := st.r[slotPC]
	var mod *module
	var bias uint64
	if m != nil {
		mod = u.resolve(m)
		bias = m.bias
	}
	if mod == nil {
		// Code no file holds: a JIT's, unwound by the CFI it wrote for
		// it, at its absolute addresses.
		if j := as.jit.at(pc, exact); j != nil {
			mod, bias = u.jitModule(j), 0
		}
	}
	if mod == nil {
		return fpStep(u.arch, st, mem, next)
	}
	rel := pc - bias
	if !exact {
		rel--
	}
	r := u.rule(mod, rel, exact)
	if r.flags&(flagNoCFI|flagBad) != 0 {
		if !exact && mod.isSigreturn(rel+1) {
			return sigreturnStep(st, mem, next)
		}
		if exact && mod.isSigreturn(rel) {
			return sigreturnStep(st, mem, next)
		}
		return fpStep(mod.arch, st, mem, next)
	}
	return cfiStep(mod, r, st, mem, next)
}

// rule returns the memoized rule for a link-time lookup PC in mod.
func (u *Unwinder) rule(mod *module, rel uint64, exact bool) *rule {
	key := rel << 1
	if exact {
		key |= 1
	}
	h := (key ^ uint64(mod.id)<<40) * 0x9e3779b97f4a7c15
	e := &u.memo[h>>(64-memoBits)]
	if e.key == key && e.mod == mod.id {
		u.memoHits++
		return &e.r
	}
	u.memoMisses++
	e.key, e.mod = key, mod.id
	mod.rule(rel, exact, &e.r)
	return &e.r
}

// resolve returns the module mapped by m, loading it on first use.
func (u *Unwinder) resolve(m *asMapping) *module {
	if m.resolved {
		return m.mod
	}
	m.resolved = true
	mod := u.module(m.Mapping)
	if mod == nil {
		return nil
	}
	var ok bool
	if m.Path == "[vdso]" {
		// The vdso is mapped from its image's start, which sits at file
		// offset zero whatever offset the backend reported.
		m.bias, ok = mod.bias(m.Start, 0)
	} else {
		m.bias, ok = mod.bias(m.Start, m.FileOffset)
	}
	if ok {
		m.mod = mod
	}
	return m.mod
}

// ReadAhead loads the unwind tables of the file at path ("[vdso]": the
// vdso) as its first mapping's first unwind would: a recorder reads ahead
// what a program maps first before it starts, so that its first samples
// cost it no file reading.
func (u *Unwinder) ReadAhead(path string) { u.module(Mapping{Path: path}) }

// Preload loads the unwind tables of the file m maps as its first unwind
// would, for a recorder that unwinds the mapping's samples only later,
// when m.Path (a map_files link, say) may no longer open it: the tables
// are kept by file (device and inode), not by path.
func (u *Unwinder) Preload(m Mapping) { u.module(m) }

func (u *Unwinder) module(mp Mapping) *module {
	var key modKey
	switch {
	case mp.Path == "[vdso]":
		key.path = mp.Path
	case mp.Path == "" || strings.HasPrefix(mp.Path, "["):
		return nil
	case mp.Dev != 0 || mp.Inode != 0:
		key.dev, key.ino = mp.Dev, mp.Inode
	default:
		var ok bool
		if key.dev, key.ino, ok = fileID(mp.Path); !ok {
			key.path = mp.Path
		}
	}
	if mod, ok := u.mods[key]; ok {
		return mod
	}
	var mod *module
	var err error
	if key.path == "[vdso]" {
		// gprof's own vdso is the target's, and reading it avoids reading
		// target memory, which a stack copy does not include.
		var img []byte
		if img, err = vdso.Image(); err == nil {
			mod, err = loadModule("[vdso]", img)
		}
	} else {
		mod, err = openModule(mp.Path)
	}
	if err != nil {
		mod = nil
	} else {
		u.nextID++
		mod.id = u.nextID
	}
	u.mods[key] = mod
	return mod
}

// ptrMask strips arm64 pointer authentication codes from return addresses.
// Linux user addresses fit in 48 bits unless a program asks for more.
const ptrMask = 1<<48 - 1

func cfiStep(mod *module, r *rule, st *state, mem *memory, next *state) bool {
	a := mod.arch
	sec := &mod.eh
	if r.flags&flagDebug != 0 {
		sec = &mod.dbg
	}
	var cfa uint64
	switch r.cfa.kind {
	case ruleReg:
		if r.cfa.reg == slotNone || !st.has(r.cfa.reg) {
			return false
		}
		cfa = st.r[r.cfa.reg] + uint64(int64(r.cfa.off))
	case rulePLT:
		cfa = st.r[slotSP] + 8
		if st.r[slotPC]&15 >= uint64(r.cfa.off) {
			cfa += 8
		}
	case ruleExpr:
		var ok bool
		cfa, ok = evalExpr(a, sec.expr(r.cfa), st, mem, 0, false)
		if !ok {
			return false
		}
	default:
		return false
	}

	raSlot := uint8(slotPC)
	ra, ok, undef := regValue(a, sec, r.ra, cfa, st, mem, slotLR)
	if undef || !ok {
		return false // outermost frame, or the RA is lost
	}
	if a == archARM64 {
		ra &= ptrMask
		next.set(slotLR, ra)
	}
	next.set(raSlot, ra)
	if fp, ok, undef := regValue(a, sec, r.fp, cfa, st, mem, slotFP); ok && !undef {
		next.set(slotFP, fp)
	}
	if a == archAMD64 {
		if k := r.bx.kind; k == ruleUnset || k == ruleSame {
			// Most frames leave rbx alone: no call for them.
			next.r[slotBX] = st.r[slotBX]
			next.valid |= st.valid & (1 << slotBX)
		} else if bx, ok, undef := regValue(a, sec, r.bx, cfa, st, mem, slotBX); ok && !undef {
			next.set(slotBX, bx)
		}
	}
	sp := cfa
	if r.sp.kind != ruleUnset && r.sp.kind != ruleSame {
		v, ok, undef := regValue(a, sec, r.sp, cfa, st, mem, slotSP)
		if !ok || undef {
			return false
		}
		sp = v
	}
	next.set(slotSP, sp)
	if r.flags&flagSignal != 0 {
		next.valid |= exactBit
	} else if sp <= st.r[slotSP] {
		return false // the stack must grow toward the caller
	}
	return true
}

// regValue recovers a register's value in the caller. same names the slot
// an unset or same-value rule keeps.
func regValue(a arch, sec *cfiSection, rr regRule, cfa uint64, st *state, mem *memory, same uint8) (v uint64, ok, undef bool) {
	switch rr.kind {
	case ruleUnset, ruleSame:
		if !st.has(same) || (a == archAMD64 && same == slotLR) {
			return 0, false, false
		}
		return st.r[same], true, false
	case ruleUndef:
		return 0, false, true
	case ruleOffset:
		addr := cfa + uint64(int64(rr.off))
		if st.has(slotSP) && addr < st.r[slotSP] && st.has(same) && !(a == archAMD64 && same == slotLR) {
			// Saved below the stack pointer: the frame is in its
			// epilogue, past the pop (GCC's epilogue CFI moves the CFA
			// but does not restore the popped registers' rules), so the
			// register already holds the caller's value. The word itself
			// is not in a stack copied from SP up.
			return st.r[same], true, false
		}
		v, ok = mem.u64(addr)
		return v, ok, false
	case ruleValOff:
		return cfa + uint64(int64(rr.off)), true, false
	case ruleReg:
		if rr.reg == slotNone || !st.has(rr.reg) {
			return 0, false, false
		}
		return st.r[rr.reg], true, false
	case ruleExpr, ruleValExpr:
		addr, ok := evalExpr(a, sec.expr(rr), st, mem, cfa, true)
		if !ok {
			return 0, false, false
		}
		if rr.kind == ruleValExpr {
			return addr, true, false
		}
		v, ok = mem.u64(addr)
		return v, ok, false
	}
	return 0, false, false
}

func (s *cfiSection) expr(rr regRule) []byte {
	lo := int(uint32(rr.off))
	hi := lo + int(rr.n)
	if hi > len(s.data) {
		return nil
	}
	return s.data[lo:hi]
}

// fpStep unwinds one frame by the frame-pointer chain: [fp] holds the
// caller's fp and [fp+8] the return address, on x86-64 and arm64 alike.
func fpStep(a arch, st *state, mem *memory, next *state) bool {
	fp := st.r[slotFP]
	if !st.has(slotFP) || fp == 0 || fp&7 != 0 || fp < st.r[slotSP] {
		return false
	}
	nfp, ok1 := mem.u64(fp)
	ra, ok2 := mem.u64(fp + 8)
	if !ok1 || !ok2 {
		return false
	}
	if a == archARM64 {
		ra &= ptrMask
	}
	next.set(slotPC, ra)
	next.set(slotSP, fp+16)
	next.set(slotFP, nfp)
	return true
}

// sigreturnStep reads the registers a signal frame saved in the ucontext
// that rt_sigreturn's trampoline finds at SP (x86-64 layout: uc_mcontext at
// 40, then r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip).
func sigreturnStep(st *state, mem *memory, next *state) bool {
	const mc = 40
	sp := st.r[slotSP]
	rbp, ok1 := mem.u64(sp + mc + 10*8)
	rsp, ok2 := mem.u64(sp + mc + 15*8)
	rip, ok3 := mem.u64(sp + mc + 16*8)
	if !ok1 || !ok2 || !ok3 {
		return false
	}
	next.set(slotPC, rip)
	next.set(slotSP, rsp)
	next.set(slotFP, rbp)
	if rbx, ok := mem.u64(sp + mc + 11*8); ok {
		next.set(slotBX, rbx)
	}
	next.valid |= exactBit
	return true
}
