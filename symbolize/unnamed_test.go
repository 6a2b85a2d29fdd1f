package symbolize

import (
	"fmt"
	"testing"
)

// A stripped program's functions, which no symbol names any more, are
// each one function named after its start, with its bounds, at every
// address of it: issue 29's libcrypto rows were one per address. The
// bounds are those the unstripped build's symbols give.
func TestLookupStrippedByFunction(t *testing.T) {
	full := build(t, "prog-O2", "gcc", "-O2", "-o", "OUT", "TESTDATA/prog.c")
	stripped := build(t, "prog-O2-stripped", "sh", "-c", "gcc -O2 -o OUT TESTDATA/prog.c && strip OUT")
	b, err := Open(stripped, NoSeparateDebug())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if syms, _ := b.Object().SymbolTable(); len(syms) > 0 {
		for _, s := range syms {
			if s.Name == "work" || s.Name == "helper" {
				t.Fatalf("the stripped build still names %s", s.Name)
			}
		}
	}
	base := b.Identity().Base
	for _, fn := range []string{"work", "helper", "main"} {
		lo, hi := funcRange(t, full, fn)
		want := fmt.Sprintf("[{Function:sub_%x FuncAddr:%d FuncSize:%d File: Line:0}]", lo-base, lo-base, hi-lo)
		bad := 0
		for a := lo; a < hi; a++ {
			if got := fmt.Sprintf("%+v", b.Lookup(a-base)); got != want {
				if bad++; bad <= 3 {
					t.Errorf("%s at %#x: %s, want %s", fn, a, got, want)
				}
			}
		}
	}
	// The entry point keeps its conventional name, and nothing is made
	// up outside every function.
	if entry, _ := b.Object().Entry(); len(b.Lookup(entry-base)) == 0 || b.Lookup(entry - base)[0].Function != "_start" {
		t.Errorf("entry: %+v", b.Lookup(entry-base))
	}
	if fr := b.Lookup(0); fr != nil {
		t.Errorf("address 0: %+v", fr)
	}
}
