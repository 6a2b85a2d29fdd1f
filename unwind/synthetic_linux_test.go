//go:build linux && amd64

package unwind

import (
	"bytes"
	"encoding/binary"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gprof-dev/gprof/internal/vdso"
	"github.com/gprof-dev/gprof/objfile"
)

// mapELF maps every PT_LOAD of the file at path into a fresh address space
// at base, as the dynamic loader would.
func mapELF(t testing.TB, path string, base uint64) *AddressSpace {
	t.Helper()
	f, err := objfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	as := new(AddressSpace)
	for _, p := range f.Segments() { // an ELF file's PT_LOADs
		start := base + p.Addr&^0xfff
		end := (base + p.Addr + p.Size + 0xfff) &^ 0xfff
		as.Add(Mapping{Start: start, End: end, FileOffset: p.Offset &^ 0xfff, Path: path})
	}
	return as
}

// TestPLT unwinds from every instruction boundary of a PLT entry, where
// the CFA is an expression of rsp and rip that we compile to a direct rule.
func TestPLT(t *testing.T) {
	bin := chainsBinary(t, "eh")
	f, err := objfile.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	plt := f.Section(".plt")
	text := f.Section(".text")
	f.Close()
	if plt == nil || plt.Size < 32 {
		t.Skip("no .plt")
	}
	const base = 0x555555554000
	as := mapELF(t, bin, base)
	u := New()
	defer u.Close()

	// Find a plausible return address: any address inside the text.
	ra := base + text.Addr + 16
	const sp = 0x7ffc0000
	// In a PLT entry: jmp *GOT (6 bytes), push $n (5), jmp PLT0 (5). Up to
	// the push the return address is at [rsp], after it at [rsp+8]. In
	// PLT0 (push GOT+8, jmp *GOT+16) one more word sits on top.
	for _, c := range []struct {
		off    uint64 // from .plt
		raSlot int    // word index of the return address at SP
	}{
		{16, 0}, {16 + 6, 0}, {16 + 11, 1}, {32, 0}, {32 + 11, 1},
		{0, 1}, {6, 2},
	} {
		stack := make([]byte, 64)
		for i := 0; i < 8; i++ {
			binary.LittleEndian.PutUint64(stack[i*8:], 0xdead0000+uint64(i))
		}
		binary.LittleEndian.PutUint64(stack[c.raSlot*8:], ra)
		regs := Regs{IP: base + plt.Addr + c.off, SP: sp}
		got := u.Unwind(as, regs, stack, nil)
		if len(got) < 2 || got[1] != ra {
			t.Errorf(".plt+%d: got %x, want return address %#x second", c.off, got, ra)
		}
		m := as.find(regs.IP)
		r := u.rule(u.resolve(m), regs.IP-m.bias, true)
		if c.off >= 16 && r.cfa.kind != rulePLT {
			t.Errorf(".plt+%d: CFA rule kind %d, want the compiled PLT rule", c.off, r.cfa.kind)
		}
	}
}

// TestVDSO unwinds from the entry of every function in the vdso, with the
// CFI of our own vdso image.
func TestVDSO(t *testing.T) {
	img, err := vdso.Image()
	if err != nil {
		t.Skip(err)
	}
	f, err := objfile.NewFile(bytesReader(img), "[vdso]")
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.SymbolTable()
	const base = 0x7fff00000000
	const caller = 0x400000
	as := new(AddressSpace)
	as.Add(Mapping{Start: base, End: base + uint64(len(img)), Path: "[vdso]"})
	as.Add(Mapping{Start: caller, End: caller + 0x1000, Path: ""})
	u := New()
	defer u.Close()
	n := 0
	for _, s := range syms {
		stack := make([]byte, 16)
		binary.LittleEndian.PutUint64(stack, caller+0x10)
		got := u.Unwind(as, Regs{IP: base + s.Addr, SP: 0x7ffc0000}, stack, nil)
		if len(got) < 2 || got[1] != caller+0x10 {
			t.Errorf("%s: got %x", s.Name, got)
		}
		m := as.find(base + s.Addr)
		if r := u.rule(u.resolve(m), s.Addr, true); r.flags&flagNoCFI != 0 {
			t.Errorf("%s: no CFI in the vdso", s.Name)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no functions in the vdso")
	}
}

// TestSigreturnWithoutCFI unwinds through libc's rt_sigreturn trampoline
// with its CFI hidden, so that the trampoline is recognized by its code
// and the registers are read from the ucontext on the stack.
func TestSigreturnWithoutCFI(t *testing.T) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	mod, err := openModule(libc)
	if err != nil {
		t.Skip(err)
	}
	defer mod.close()
	// Find the trampoline by its code.
	tramp := uint64(0)
	for _, p := range mod.loads {
		if !p.Exec {
			continue
		}
		code := mod.image[p.Offset : p.Offset+p.FileSize]
		if i := bytesIndex(code, sigreturnAMD64); i >= 0 {
			tramp = p.Addr + uint64(i)
		}
	}
	if tramp == 0 {
		t.Skip("no rt_sigreturn trampoline in libc")
	}
	const base = 0x7f0000000000
	const interrupted = 0x400123
	const sp = 0x7ffc0000
	stack := make([]byte, 512)
	binary.LittleEndian.PutUint64(stack[40+10*8:], 0x7ffc1000)  // rbp
	binary.LittleEndian.PutUint64(stack[40+15*8:], 0x7ffc0800)  // rsp
	binary.LittleEndian.PutUint64(stack[40+16*8:], interrupted) // rip
	for _, hide := range []bool{false, true} {
		as := mapELF(t, libc, base)
		as.Add(Mapping{Start: 0x400000, End: 0x401000})
		u := New()
		m := as.find(base + tramp)
		mod2 := *u.resolve(m)
		if hide {
			mod2.hasEH = false
			mod2.hasDb = false
		}
		m.mod = &mod2
		// The trampoline is reached as the return address of a handler,
		// so it is not the first frame: unwind a fake leaf above it that
		// has no mapping, through its frame pointer.
		leafStack := make([]byte, 16+len(stack))
		binary.LittleEndian.PutUint64(leafStack[0:], 0)          // caller fp
		binary.LittleEndian.PutUint64(leafStack[8:], base+tramp) // return address
		copy(leafStack[16:], stack)
		got := u.Unwind(as, Regs{IP: 0x400010, SP: sp - 16, FP: sp - 16}, leafStack, nil)
		if len(got) < 3 || got[1] != base+tramp || got[2] != interrupted {
			t.Errorf("hide CFI %v: got %x, want [.. %#x %#x]", hide, got, base+tramp, uint64(interrupted))
		}
		u.Close()
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

func bytesIndex(b, sep []byte) int { return bytes.Index(b, sep) }

// cfiIdioms assembles testdata/cfi.S into a shared object, maps it at a
// fixed base and returns the address space and its symbols' addresses.
func cfiIdioms(t *testing.T) (*AddressSpace, map[string]uint64) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc to assemble testdata/cfi.S")
	}
	so := filepath.Join(t.TempDir(), "cfi.so")
	if out, err := exec.Command("gcc", "-shared", "-nostdlib", "-o", so, "testdata/cfi.S").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	f, err := objfile.Open(so)
	if err != nil {
		t.Fatal(err)
	}
	// The labels are global and untyped, in .text: function-like symbols.
	syms, err := f.SymbolTable()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	const base = 0x7f0000000000
	addr := map[string]uint64{}
	for _, s := range syms {
		addr[s.Name] = base + s.Addr
	}
	return mapELF(t, so, base), addr
}

// stackAt copies a stack from address from to end: words holds values by
// address (those outside it are not in the copy), the rest is zero.
func stackAt(from uint64, words map[uint64]uint64, end uint64) []byte {
	b := make([]byte, end-from)
	for a, v := range words {
		if a >= from && a+8 <= end {
			binary.LittleEndian.PutUint64(b[a-from:], v)
		}
	}
	return b
}

// belowSP is a reader that answers with garbage below sp and nothing
// elsewhere: an unwinder that needs the word under the stack pointer (which
// no stack copy has) must not get a plausible value from it.
func belowSP(sp uint64) ReadMemory {
	return func(b []byte, a uint64) bool {
		binary.LittleEndian.PutUint64(b, 0xbad0bad0)
		return a < sp
	}
}

// epilogueSP is the stack pointer of epilogueStack's callee frame.
const epilogueSP = 0x7ffc00001000

// epilogueStack returns the words of the stack of callee in
// testdata/cfi.S, from epilogueSP up: callee's return address; caller's
// 64 bytes; caller's saved rbp at epilogueSP+72, where caller's rbp
// points; its return address into outer; outer's padding word; a zero
// return address, the chain's end.
func epilogueStack(addr map[string]uint64) map[uint64]uint64 {
	return map[uint64]uint64{epilogueSP: addr["caller_ret"], epilogueSP + 72: 0x7ffc0000ff00, epilogueSP + 80: addr["outer_ret"]}
}

// TestEpilogue unwinds from callee in testdata/cfi.S before and after its
// epilogue pops rbp. After the pop, the CFI still says rbp is saved below
// the stack pointer: the register already holds the caller's value, and
// the word itself is in no stack copy (perf copies from SP up). Taking the
// rule literally lost rbp, and with it every frame above a caller whose
// CFA is rbp-based: seen in glibc's msort_with_tmp under qsort_r, whose
// alloca makes its CFA rbp+16.
func TestEpilogue(t *testing.T) {
	as, addr := cfiIdioms(t)
	u := New()
	defer u.Close()
	words := epilogueStack(addr)
	for _, c := range []struct {
		name   string
		ip, sp uint64
		fp     uint64
	}{
		{"before the pop", addr["callee_pop"], epilogueSP - 8, 1},
		{"after the pop", addr["callee_ret"], epilogueSP, epilogueSP + 72},
	} {
		words[epilogueSP-8] = epilogueSP + 72 // callee's saved rbp
		stack := stackAt(c.sp, words, epilogueSP+112)
		want := []uint64{c.ip, addr["caller_ret"], addr["outer_ret"]}
		for _, read := range []ReadMemory{nil, belowSP(c.sp)} {
			got := u.UnwindMemory(as, Regs{IP: c.ip, SP: c.sp, FP: c.fp}, stack, read, nil)
			if !slices.Equal(got, want) {
				t.Errorf("%s (reader %v): got %#x, want %#x", c.name, read != nil, got, want)
			}
		}
	}
}

// TestCFAInRBX unwinds through trampoline in testdata/cfi.S, whose CFA is
// rbx+16 after it realigns the stack, as glibc's lazy-binding trampoline
// does: from the trampoline itself, with rbx from the registers, and from
// leaf above it, which saved rbx and clobbered it.
func TestCFAInRBX(t *testing.T) {
	as, addr := cfiIdioms(t)
	u := New()
	defer u.Close()
	// The trampoline's CFA is C; it pushed the caller's rbx at T = C-16
	// and pointed rbx there; its aligned stack ends at A.
	const C = 0x7ffc00002000
	const T = C - 16
	const A = T&^63 - 128
	words := map[uint64]uint64{
		A - 16: T,                      // leaf's saved rbx
		A - 8:  addr["trampoline_ret"], // leaf's return address
		T:      0x1234,                 // the trampoline caller's rbx
		T + 8:  addr["outer_ret"],      // the trampoline's return address
	}
	for _, c := range []struct {
		name       string
		ip, sp, bx uint64
		want       []uint64
	}{
		{"in the trampoline", addr["trampoline_body"], A, T, []uint64{addr["outer_ret"]}},
		{"in leaf", addr["leaf_body"], A - 16, 2, []uint64{addr["trampoline_ret"], addr["outer_ret"]}},
	} {
		stack := stackAt(c.sp, words, C+32)
		want := append([]uint64{c.ip}, c.want...)
		got := u.Unwind(as, Regs{IP: c.ip, SP: c.sp, FP: 0x1111, BX: c.bx}, stack, nil)
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %#x, want %#x", c.name, got, want)
		}
		// Without rbx the trampoline cannot be unwound, and nothing
		// made up takes its place.
		if got := u.Unwind(as, Regs{IP: c.ip, SP: c.sp, FP: 0x1111}, stack, nil); c.bx == T && len(got) != 1 {
			t.Errorf("%s without rbx: got %#x, want the IP alone", c.name, got)
		}
	}
}

// TestUnwindCopyCutShort: UnwindCopy says a stack ended for want of the
// words past its copy only when that is why it ended, not when it reached
// its outermost frame.
func TestUnwindCopyCutShort(t *testing.T) {
	as, addr := cfiIdioms(t)
	u := New()
	defer u.Close()
	// callee after its pop, as in TestEpilogue: caller's return address
	// into outer sits at epilogueSP+80.
	words := epilogueStack(addr)
	regs := Regs{IP: addr["callee_ret"], SP: epilogueSP, FP: epilogueSP + 72}
	for _, c := range []struct {
		end   uint64 // the copy's end
		n     int    // frames
		short bool
	}{
		{epilogueSP + 112, 3, false}, // whole: ends at a zero return address
		{epilogueSP + 80, 2, true},   // the return address into outer is past the end
		{epilogueSP + 8, 2, true},    // so is caller's saved rbp
	} {
		got, short := u.UnwindCopy(as, regs, stackAt(epilogueSP, words, c.end), nil)
		if len(got) != c.n || short != c.short {
			t.Errorf("copy of %d bytes: %d frames, cut short %v; want %d, %v", c.end-epilogueSP, len(got), short, c.n, c.short)
		}
	}
}
