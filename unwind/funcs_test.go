package unwind

import (
	"testing"

	"github.com/gprof-dev/gprof/objfile"
)

// Every sized function symbol of libc starts an FDE that ends where the
// symbol does (where the compiler split no part of it away): the bounds
// FuncBounds gives a stripped binary's code are its functions'.
func TestFuncBoundsAgainstSymbols(t *testing.T) {
	for _, path := range systemBinaries {
		f, err := objfile.Open(path)
		if err != nil {
			continue
		}
		defer f.Close()
		b := NewFuncBounds(f)
		syms, _ := f.SymbolTable()
		checked, agree := 0, 0
		for _, s := range syms {
			if s.Size == 0 {
				continue
			}
			checked++
			if start, end, ok := b.Find(s.Addr + s.Size/2); ok && start == s.Addr && end == s.Addr+s.Size {
				agree++
			}
		}
		t.Logf("%s: %d of %d sized symbols are exactly an FDE's bounds", path, agree, checked)
		if checked < 100 || agree*10 < checked*9 {
			t.Errorf("%s: %d of %d symbols agree with their FDE", path, agree, checked)
		}
		if _, _, ok := b.Find(0); ok {
			t.Errorf("%s: address 0 is in a function", path)
		}
		return
	}
	t.Skip("none of the libraries is here")
}

// ehFrame builds a small .eh_frame at address addr: one CIE and an FDE
// for [start, start+size), pc-relative as linkers write them.
func ehFrame(addr, start, size uint64) []byte {
	le32 := func(b []byte, v uint32) []byte { return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24)) }
	cie := []byte{0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 0x07, 0x08, 0, 0}
	b := le32(nil, uint32(len(cie)))
	b = append(b, cie...)
	fdeAt := len(b)
	body := le32(nil, uint32(fdeAt+4)) // back to the CIE
	pcAt := uint64(fdeAt + 8)
	body = le32(body, uint32(start-(addr+pcAt)))
	body = le32(body, uint32(size))
	body = append(body, 0, 0, 0, 0)
	b = le32(b, uint32(len(body)))
	b = append(b, body...)
	return le32(b, 0)
}

func TestFuncBoundsSynthetic(t *testing.T) {
	s := cfiSection{data: ehFrame(0x2000, 0x1000, 0x40), addr: 0x2000, eh: true}
	s.buildIndex()
	b := &FuncBounds{eh: s, hasEH: true}
	if start, end, ok := b.Find(0x1010); !ok || start != 0x1000 || end != 0x1040 {
		t.Errorf("Find(0x1010) = %#x, %#x, %v", start, end, ok)
	}
	if _, _, ok := b.Find(0x1040); ok {
		t.Errorf("0x1040, past the function, is in it")
	}
}

// FuzzFuncBounds: no .eh_frame, however damaged, makes finding a
// function panic or loop.
func FuzzFuncBounds(f *testing.F) {
	f.Add(ehFrame(0x2000, 0x1000, 0x40), uint64(0x1010))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, pc uint64) {
		s := cfiSection{data: data, addr: 0x2000, eh: true}
		s.buildIndex()
		b := &FuncBounds{eh: s, hasEH: true}
		if start, end, ok := b.Find(pc); ok && !(start <= pc && pc < end) {
			t.Fatalf("Find(%#x) = [%#x, %#x)", pc, start, end)
		}
	})
}

// An object with no file of its own (symbols from a PDB alone) has no call
// frame information: its FuncBounds finds nothing rather than crashing.
func TestFuncBoundsNoFile(t *testing.T) {
	if _, _, ok := NewFuncBounds(nil).Find(0x1010); ok {
		t.Error("FuncBounds of no file found a function")
	}
}
