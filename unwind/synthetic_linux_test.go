//go:build linux && amd64

package unwind

import (
	"debug/elf"
	"encoding/binary"
	"testing"
)

// mapELF maps every PT_LOAD of the file at path into a fresh address space
// at base, as the dynamic loader would.
func mapELF(t testing.TB, path string, base uint64) *AddressSpace {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	as := new(AddressSpace)
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		start := base + p.Vaddr&^0xfff
		end := (base + p.Vaddr + p.Memsz + 0xfff) &^ 0xfff
		as.Add(Mapping{Start: start, End: end, FileOffset: p.Off &^ 0xfff, Path: path})
	}
	return as
}

// TestPLT unwinds from every instruction boundary of a PLT entry, where
// the CFA is an expression of rsp and rip that we compile to a direct rule.
func TestPLT(t *testing.T) {
	bin := chainsBinary(t, "eh")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	plt := f.Section(".plt")
	f.Close()
	if plt == nil || plt.Size < 32 {
		t.Skip("no .plt")
	}
	const base = 0x555555554000
	as := mapELF(t, bin, base)
	u := New()
	defer u.Close()

	// Find a plausible return address: any address inside the text.
	text := f.Section(".text")
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
