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
