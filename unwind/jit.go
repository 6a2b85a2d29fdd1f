package unwind

import "sort"

// JITCode is generated code that no file holds, with the .eh_frame its
// JIT wrote for it (a jitdump's unwinding records): frames in it are
// unwound by that CFI rather than by frame pointers, which JIT code such
// as CPython's perf trampolines does not keep.
type JITCode struct {
	Start, End uint64
	EHFrame    []byte
	// EHFrameAt is the address the .eh_frame's pc-relative pointers
	// assume it sits at.
	EHFrameAt uint64
}

// AddJIT adds code to the address space. Newer code replaces older code it
// overlaps, as a JIT reuses memory.
func (as *AddressSpace) AddJIT(c JITCode) {
	if c.End <= c.Start || len(c.EHFrame) == 0 {
		return
	}
	as.jit.seq++
	as.jit.code = append(as.jit.code, jitCode{JITCode: c, seq: as.jit.seq})
	as.jit.dirty = true
}

// jitTable is an address space's JIT code, sorted by Start on first use
// after a change.
type jitTable struct {
	code  []jitCode
	seq   uint64
	dirty bool
}

type jitCode struct {
	JITCode
	seq uint64
	mod *module // built on first use
}

// at returns the code holding pc (pc-1 for a return address), or nil.
func (t *jitTable) at(pc uint64, exact bool) *jitCode {
	if len(t.code) == 0 {
		return nil
	}
	if t.dirty {
		t.sort()
	}
	if !exact {
		pc--
	}
	i := sort.Search(len(t.code), func(i int) bool { return t.code[i].Start > pc }) - 1
	if i >= 0 && pc < t.code[i].End {
		return &t.code[i]
	}
	return nil
}

// sort orders the code by address, dropping code that newer code
// overlaps.
func (t *jitTable) sort() {
	t.dirty = false
	c := t.code
	sort.SliceStable(c, func(i, j int) bool { return c[i].Start < c[j].Start })
	out := c[:0]
	for _, x := range c {
		// Drop older neighbours that x overlaps, and x if a newer one
		// overlaps it.
		keep := true
		for len(out) > 0 && out[len(out)-1].End > x.Start {
			if out[len(out)-1].seq > x.seq {
				keep = false
				break
			}
			out = out[:len(out)-1]
		}
		if keep {
			out = append(out, x)
		}
	}
	clear(c[len(out):])
	t.code = out
}

// jitModule returns the unwind module of JIT code, built on first use. Its
// addresses are the process's own (bias 0).
func (u *Unwinder) jitModule(j *jitCode) *module {
	if j.mod != nil {
		return j.mod
	}
	m := &module{arch: u.arch, name: "[jit]"}
	m.eh = cfiSection{data: j.EHFrame, addr: j.EHFrameAt, eh: true}
	m.eh.buildIndex()
	m.hasEH = len(m.eh.index) > 0
	u.nextID++
	m.id = u.nextID
	j.mod = m
	return m
}
