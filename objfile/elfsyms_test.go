package objfile

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// NamedSymbols reads the raw tables itself: it must find what debug/elf's
// Symbols and DynamicSymbols find, filtered as SymbolTable and
// DataSymbols filter them, on real files of both classes; and keep only
// the names asked for.
func TestNamedSymbolsMatchesDebugELF(t *testing.T) {
	var paths []string
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/xz"} {
		if _, err := os.Stat(p); err == nil {
			paths = append(paths, p)
		}
	}
	if p := build(t, "inline32.o", nil, "gcc", "-m32", "-c", "-o", "OUT", "TESTDATA/inline.c"); p != "" {
		paths = append(paths, p)
	}
	for _, path := range paths {
		ef, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var wantFuncs, wantData []string
		for _, read := range []func() ([]elf.Symbol, error){ef.Symbols, ef.DynamicSymbols} {
			syms, _ := read()
			for _, s := range syms {
				key := fmt.Sprintf("%s@%#x+%d", s.Name, s.Value, s.Size)
				if elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Section != elf.SHN_UNDEF && s.Value != 0 {
					wantData = append(wantData, key)
				} else if isFuncSymbol(ef, s) {
					wantFuncs = append(wantFuncs, key)
				}
			}
		}
		ef.Close()
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		funcs, data := f.NamedSymbols(func([]byte) bool { return true })
		keys := func(ss []Symbol) []string {
			var out []string
			for _, s := range ss {
				out = append(out, fmt.Sprintf("%s@%#x+%d", s.Name, s.Addr, s.Size))
			}
			return out
		}
		if got := keys(funcs); !slices.Equal(got, wantFuncs) {
			t.Errorf("%s: %d functions, debug/elf %d", path, len(got), len(wantFuncs))
		}
		if got := keys(data); !slices.Equal(got, wantData) {
			t.Errorf("%s: %d data symbols, debug/elf %d", path, len(got), len(wantData))
		}
		if strings.HasSuffix(path, ".o") && len(wantFuncs) == 0 {
			t.Errorf("%s: no functions to compare", path)
		}
		some, _ := f.NamedSymbols(func(n []byte) bool { return bytes.HasPrefix(n, []byte("main")) })
		for _, s := range some {
			if !strings.HasPrefix(s.Name, "main") {
				t.Errorf("%s: kept %q, not asked for", path, s.Name)
			}
		}
		f.Close()
		t.Logf("%s: %d functions, %d data symbols", path, len(funcs), len(data))
	}
}
