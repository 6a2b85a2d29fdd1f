package profile

import (
	"fmt"
	"sort"
)

// KernelDebugName is the DebugName of the pseudo-library kernel addresses
// are keyed under in a SymbolTable when no library of the process covers
// them. Its addresses are absolute (its base is 0).
const KernelDebugName = "kernel"

// KernelKey keys kernel frames outside any library in a SymbolTable.
var KernelKey = LibKey{DebugName: KernelDebugName}

// PerfMapKey keys JIT frames of process pid, resolved from its perf map, in
// a SymbolTable. Its addresses are absolute.
func PerfMapKey(pid int) LibKey {
	return LibKey{DebugName: fmt.Sprintf("perf-%d.map", pid)}
}

// FindLib returns the library covering addr (Start <= addr < End) in libs,
// which must be sorted by Start and non-overlapping, or nil.
func FindLib(libs []Lib, addr uint64) *Lib {
	i := sort.Search(len(libs), func(i int) bool { return libs[i].Start > addr }) - 1
	if i >= 0 && addr < libs[i].End {
		return &libs[i]
	}
	return nil
}

// Rel returns absolute address addr relative to l, as the Firefox Profiler
// and SymbolTable count it: from l's base, Start - Offset.
func (l *Lib) Rel(addr uint64) uint64 { return addr - (l.Start - l.Offset) }

// Locate says where symbolizers file the symbols of native frame f of p:
// under the key of the library covering it at the library-relative
// address, or, outside every library, under KernelKey (kernel frames) or
// PerfMapKey (others) at the absolute address. Label frames have no
// location.
func (p *Process) Locate(f Frame) (key LibKey, rel uint64, ok bool) {
	if f.Label != "" {
		return LibKey{}, 0, false
	}
	if lib := FindLib(p.Libs, f.Address); lib != nil {
		return lib.Key(), lib.Rel(f.Address), true
	}
	if f.Category == CategoryKernel {
		return KernelKey, f.Address, true
	}
	return PerfMapKey(p.Pid), f.Address, true
}
