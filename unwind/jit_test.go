package unwind

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/symbolize/jitdump"
)

// CPython's perf trampolines keep no frame pointer: a stack through them
// unwinds only by the CFI its jitdump gives for each.
func TestJITCodeUnwindsByItsCFI(t *testing.T) {
	d, err := jitdump.Read("../symbolize/jitdump/testdata/python3.13.dump")
	if err != nil {
		t.Fatal(err)
	}
	var inner, outer *jitdump.Code
	for i := range d.Code {
		switch c := &d.Code[i]; {
		case strings.HasPrefix(c.Name, "py::inner:"):
			inner = c
		case strings.HasPrefix(c.Name, "py::outer:"):
			outer = c
		}
	}
	if inner == nil || outer == nil {
		t.Fatal("no inner and outer trampolines in the dump")
	}
	lo, hi := min(inner.Addr, outer.Addr)&^0xfff, max(inner.Addr, outer.Addr)+0x1000
	// The trampoline is "sub $8,%rsp; call *%rcx; add $8,%rsp; ret": the
	// call returns to +6, where the CFA is rsp+16.
	const sp = 0x7ffc0000
	stack := make([]byte, 64)
	binary.LittleEndian.PutUint64(stack[8:], outer.Addr+6) // inner's return address
	binary.LittleEndian.PutUint64(stack[16+8:], 0)         // outer's: the end
	regs := Regs{IP: inner.Addr + 6, SP: sp, FP: 0}

	u := New()
	defer u.Close()
	var as AddressSpace
	as.Add(Mapping{Start: lo, End: hi}) // anonymous: no file, no CFI
	if got := u.Unwind(&as, regs, stack, nil); len(got) != 1 {
		t.Fatalf("without the dump's CFI: %#x, want the leaf alone", got)
	}
	for _, c := range []*jitdump.Code{inner, outer} {
		as.AddJIT(JITCode{Start: c.Addr, End: c.Addr + c.Size, EHFrame: c.EHFrame, EHFrameAt: c.EHFrameAt})
	}
	got := u.Unwind(&as, regs, stack, nil)
	if want := []uint64{inner.Addr + 6, outer.Addr + 6}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("with it: %#x, want %#x", got, want)
	}
	// Code the JIT put elsewhere later replaces what it overlaps.
	as.AddJIT(JITCode{Start: inner.Addr, End: inner.Addr + 2, EHFrame: outer.EHFrame, EHFrameAt: outer.EHFrameAt})
	if got := u.Unwind(&as, regs, stack, nil); len(got) != 1 {
		t.Errorf("after inner's code was replaced: %#x, want the leaf alone", got)
	}
}
