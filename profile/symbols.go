package profile

// SymbolTable holds symbolication results for the libraries of a profile,
// keyed by library identity, so names survive the binaries they came from.
type SymbolTable struct {
	Libs map[LibKey]*LibSymbols
}

// LibSymbols maps lib-relative addresses (as the Firefox Profiler computes
// them: address minus the lib's base) to what the address is.
type LibSymbols struct {
	Addresses map[uint64][]SymbolFrame
}

// SymbolFrame is one function level at an address. A lookup yields the
// outer (real) function first, then each inlined callee inward; only the
// first level has FuncAddr and FuncSize.
type SymbolFrame struct {
	Function string // demangled name
	FuncAddr uint64 // lib-relative start of the function; 0 when unknown
	FuncSize uint64 // 0 when unknown
	File     string
	Line     int // 0 when unknown
}

// Lookup returns the frames for lib-relative address addr of lib k.
func (s *SymbolTable) Lookup(k LibKey, addr uint64) []SymbolFrame {
	if s == nil {
		return nil
	}
	ls := s.Libs[k]
	if ls == nil {
		return nil
	}
	return ls.Addresses[addr]
}

// Add records frames for lib-relative address addr of lib k.
func (s *SymbolTable) Add(k LibKey, addr uint64, frames []SymbolFrame) {
	if s.Libs == nil {
		s.Libs = make(map[LibKey]*LibSymbols)
	}
	ls := s.Libs[k]
	if ls == nil {
		ls = &LibSymbols{Addresses: make(map[uint64][]SymbolFrame)}
		s.Libs[k] = ls
	}
	ls.Addresses[addr] = frames
}

// LookupAddr is where the symbols of a frame at lib-relative (or, outside
// every lib, absolute) address addr are looked up and filed: for a caller,
// whose address is a return address, one byte lower, inside the call
// instruction; for a sampled instruction (a leaf), the address itself.
//
// The instruction after a call can belong to another line, to a function
// inlined right after the call (Go and C compilers do this constantly) or,
// after a call that never returns, to the next function altogether, so a
// caller looked up at its return address shows callers that were never on
// the stack. This is the one rule: symbolize.Profile looks every symbol
// source (symbol tables, DWARF, Go's pclntab and inline tree, PDBs, perf
// maps, the kernel's symbols) up at the address it gives, and LookupFrame,
// which every reader of a SymbolTable goes through, reads there. The
// Firefox Profiler does the same ("nudged" return addresses) when it
// symbolicates.
func LookupAddr(addr uint64, caller bool) uint64 {
	if caller && addr > 0 {
		return addr - 1
	}
	return addr
}

// LookupFrame returns the frames for a frame at lib-relative address rel of
// lib k, in the role it has on the stack: a caller (return address) or the
// sampled instruction. The table is read at LookupAddr(rel, caller); for a
// caller, the raw address is tried when that has nothing, which is where
// tables written before callers were filed apart kept their answer, and
// where a frame known to be an exact instruction (the user frame a kernel
// stack sits on) is filed.
func (s *SymbolTable) LookupFrame(k LibKey, rel uint64, caller bool) []SymbolFrame {
	if f := s.Lookup(k, LookupAddr(rel, caller)); len(f) > 0 || !caller {
		return f
	}
	return s.Lookup(k, rel)
}

// KernelLib returns the key of the symbols for kernel addresses outside any
// library: KernelKey if the table has it, else the key named KernelDebugName
// with the smallest BreakpadID, so the choice does not depend on map order.
// ok is false if there is none.
func (s *SymbolTable) KernelLib() (k LibKey, ok bool) {
	if s == nil {
		return LibKey{}, false
	}
	if _, ok := s.Libs[KernelKey]; ok {
		return KernelKey, true
	}
	for l := range s.Libs {
		if l.DebugName == KernelDebugName && (!ok || l.BreakpadID < k.BreakpadID) {
			k, ok = l, true
		}
	}
	return k, ok
}

// AddMissing copies the entries of old that s lacks, so that names which
// can no longer be resolved keep what an earlier symbolication found.
func (s *SymbolTable) AddMissing(old *SymbolTable) {
	if old == nil {
		return
	}
	for k, ls := range old.Libs {
		for addr, frames := range ls.Addresses {
			if s.Lookup(k, addr) == nil {
				s.Add(k, addr, frames)
			}
		}
	}
}

// FuncFiles names, for each function of lib k, the one source file the
// function is shown under: the file most of its entries' lines are in,
// ties going to the first in order. A function is one function whatever
// files its lines come from (CPython's interpreter loop #includes its
// generated cases, C code inlines from headers at the outer level of a
// macro), and the Firefox Profiler's function table has one file per
// function, its lines per frame; names that appear with no file map to "".
func (s *SymbolTable) FuncFiles(k LibKey) map[string]string {
	if s == nil || s.Libs[k] == nil {
		return nil
	}
	type fileKey struct{ fn, file string }
	n := map[fileKey]int{}
	out := map[string]string{}
	for _, frames := range s.Libs[k].Addresses {
		for _, f := range frames {
			if _, ok := out[f.Function]; !ok {
				out[f.Function] = ""
			}
			if f.File != "" {
				n[fileKey{f.Function, f.File}]++
			}
		}
	}
	best := map[string]int{}
	for fk, c := range n {
		cur, ok := best[fk.fn]
		if !ok || c > cur || c == cur && fk.file < out[fk.fn] {
			best[fk.fn], out[fk.fn] = c, fk.file
		}
	}
	return out
}
