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

// LookupFrame returns the frames for a frame at lib-relative address rel of
// lib k. A caller's address is a return address, just past its call
// instruction; symbolizers file what the call resolves to under the raw
// address, but tables filled by others may hold it one byte lower, inside
// the call, so for callers that key is tried when the raw one has nothing.
func (s *SymbolTable) LookupFrame(k LibKey, rel uint64, caller bool) []SymbolFrame {
	if f := s.Lookup(k, rel); len(f) > 0 {
		return f
	}
	if caller && rel > 0 {
		return s.Lookup(k, rel-1)
	}
	return nil
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
