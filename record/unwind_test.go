package record

import (
	"encoding/binary"
	"testing"

	"github.com/gprof-dev/gprof/event"
)

// TestCutShortCountsOnlyLostFrames: a stack copy that ends before the
// outermost frame costs nothing when the kernel's frame-pointer chain goes
// on from where the copy ended, so such stacks are not counted as cut
// short (issue 18: go build was said to lose 33% of its stacks while 98.7%
// reached a thread root); a stack nothing continues is.
func TestCutShortCountsOnlyLostFrames(t *testing.T) {
	const (
		sp   = 0x7fff0000
		code = 0x400000
	)
	// Three frames by frame pointers: leaf at code+0x10, its caller's
	// return address at code+0x20 and the next at code+0x30, but the copy
	// holds only the first frame record; the next record lies past it.
	stack := make([]byte, 32)
	binary.LittleEndian.PutUint64(stack[0:], sp+16)     // saved fp
	binary.LittleEndian.PutUint64(stack[8:], code+0x20) // return address
	// stack[16:32]: the next record would be at sp+16.. but the copy is
	// only 24 bytes long below.
	pr := &proc{mappings: []mapping{{Map: event.Map{Start: code, End: code + 0x1000, Path: "[anon:jit]"}}}}
	for _, c := range []struct {
		name      string
		chain     []uint64 // the kernel's frame-pointer chain, leaf first
		cut       int
		wantDepth int
	}{
		{"continued by the kernel's chain", []uint64{code + 0x10, code + 0x20, code + 0x30, code + 0x40}, 0, 4},
		{"nothing goes on", nil, 1, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			uw := newUserUnwinder()
			defer uw.close()
			s := &event.Sample{Regs: &event.Regs{IP: code + 0x10, SP: sp, FP: sp}, StackCopy: stack[:24], Stack: c.chain}
			out := uw.unwind(pr, s, nil)
			if len(out) != c.wantDepth {
				t.Errorf("frames %#x, want %d", out, c.wantDepth)
			}
			if uw.stacks != 1 || uw.cutShort != c.cut {
				t.Errorf("stacks %d, cut short %d; want 1, %d", uw.stacks, uw.cutShort, c.cut)
			}
		})
	}
}
