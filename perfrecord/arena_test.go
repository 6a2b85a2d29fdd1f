package perfrecord

import (
	"testing"
	"unsafe"
)

// A prepared arena copies into the buffer it prepared until that is full.
func TestArenaPrepare(t *testing.T) {
	var a Arena
	a.Prepare(64 << 10)
	base := unsafe.SliceData(a.bytes[:1])
	src := make([]byte, 1000)
	for range 60 {
		a.byteSlice(src)
	}
	if unsafe.SliceData(a.bytes) != base {
		t.Fatal("60 KB in a 64 KB prepared arena took a new buffer")
	}
	a.Reset()
	a.Prepare(16 << 10) // smaller: kept as it is
	if cap(a.bytes) != 64<<10 {
		t.Errorf("cap %d after a smaller Prepare, want the 64 KB kept", cap(a.bytes))
	}
}
