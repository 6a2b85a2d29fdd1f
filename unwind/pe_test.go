package unwind

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/gprof-dev/gprof/objfile"
)

// TestUnwindPECaptured unwinds a real stack: testdata/pe/capture.exe (see
// capture.c) ran under Wine, captured its own context four calls deep
// and stored each function's return address. The frames cover a leaf
// context, a large allocation, a frame pointer set with UWOP_SET_FPREG
// after an alloca, and pushed nonvolatile registers.
func TestUnwindPECaptured(t *testing.T) {
	f, err := objfile.Open("testdata/pe/capture.exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := NewPEImage(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/pe/capture.bin")
	if err != nil {
		t.Fatal(err)
	}
	w := func(i int) uint64 { return binary.LittleEndian.Uint64(raw[8*i:]) }
	base, rip, rsp, rbp, n := w(0), w(1), w(2), w(3), int(w(4))
	ras := []uint64{w(8), w(7), w(6), w(5)} // f4's, f3's, f2's, f1's
	stack := raw[72 : 72+n]
	_, sizeOfImage, _ := f.PEHeader()
	size := uint64(sizeOfImage)
	mods := []PEModule{{Base: base, End: base + size, Image: img}}

	got := UnwindPE(mods, Regs{IP: rip, SP: rsp, FP: rbp}, stack, 0, nil)
	want := append([]uint64{rip}, ras...)
	if len(got) < len(want) {
		t.Fatalf("unwound %#x, want at least %#x", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("frame %d = %#x, want %#x (all: %#x)", i, got[i], want[i], got)
		}
	}
	t.Logf("frames: %#x", got)
}

// TestUnwindPEPrologueEpilogue unwinds __do_global_ctors of capture.exe
// (push rsi; push rbx; sub rsp, 0x28 ... add rsp, 0x28; pop rbx; pop rsi;
// jmp atexit, as x86_64-w64-mingw32-objdump -d and -x show it) from PCs in
// its prologue, body and epilogue, over a stack laid out as the function
// has it at each.
func TestUnwindPEPrologueEpilogue(t *testing.T) {
	f, err := objfile.Open("testdata/pe/capture.exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := NewPEImage(f)
	if err != nil {
		t.Fatal(err)
	}
	const base, caller = 0x140000000, 0x140002000
	mods := []PEModule{{Base: base, End: base + 0x40000, Image: img}}
	for _, c := range []struct {
		name  string
		pc    uint64
		below int // bytes the function has pushed or allocated at pc
	}{
		{"entry", 0x140001770, 0},
		{"after push rsi", 0x140001771, 8},
		{"after push rbx", 0x140001772, 16},
		{"body", 0x140001790, 16 + 0x28},
		{"epilogue add rsp", 0x1400017b2, 16 + 0x28},
		{"epilogue pop rbx", 0x1400017b6, 16},
		{"epilogue pop rsi", 0x1400017b7, 8},
	} {
		stack := make([]byte, c.below+16)
		for i := 0; i < c.below; i += 8 {
			binary.LittleEndian.PutUint64(stack[i:], 0xdead0000+uint64(i)) // not a code address
		}
		binary.LittleEndian.PutUint64(stack[c.below:], caller)
		const sp = 0x10000
		got := UnwindPE(mods, Regs{IP: c.pc, SP: sp}, stack, 2, nil)
		if len(got) != 2 || got[1] != caller {
			t.Errorf("%s (pc %#x): unwound %#x, want the caller %#x", c.name, c.pc, got, caller)
		}
	}
}
