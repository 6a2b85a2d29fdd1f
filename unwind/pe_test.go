package unwind

import (
	"debug/pe"
	"encoding/binary"
	"os"
	"testing"
)

// TestUnwindPECaptured unwinds a real stack: testdata/pe/capture.exe (see
// capture.c) ran under Wine, captured its own context four calls deep
// and stored each function's return address. The frames cover a leaf
// context, a large allocation, a frame pointer set with UWOP_SET_FPREG
// after an alloca, and pushed nonvolatile registers.
func TestUnwindPECaptured(t *testing.T) {
	f, err := pe.Open("testdata/pe/capture.exe")
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
	size := uint64(f.OptionalHeader.(*pe.OptionalHeader64).SizeOfImage)
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
