package perfrecord

import (
	"unsafe"

	"github.com/gprof-dev/gprof/event"
)

// An Arena owns the memory of the events a Decoder decodes into it: the
// events themselves, their frames, registers and stack copies. Handing
// events out of an arena allocates nothing once it has grown to a batch's
// size, so a live backend decodes its rings without allocating per record
// (samples are a thousand a second per CPU). The zero Arena is ready to use.
//
// Events from an arena stay valid until Reset: a live backend hands one
// arena's events to its handler while the next batch fills another, and
// resets the first when the handler is done with them.
type Arena struct {
	// Borrow makes the byte slices of events (stack copies, build-ids)
	// point into the records rather than into copies: for records that
	// outlive their events, as a perf.data file held in memory does. A
	// ring's records do not: their space is handed back to the kernel.
	Borrow bool

	samples  chunk[event.Sample]
	regs     chunk[event.Regs]
	maps     chunk[event.Map]
	comms    chunk[event.Comm]
	forks    chunk[event.Fork]
	exits    chunk[event.Exit]
	losts    chunk[event.Lost]
	switches chunk[event.Switch]
	frames   []uint64
	bytes    []byte
}

// Reset makes all of the arena's memory reusable: the events it handed
// out must no longer be used.
func (a *Arena) Reset() {
	a.samples.used, a.regs.used, a.maps.used, a.comms.used = 0, 0, 0, 0
	a.forks.used, a.exits.used, a.losts.used, a.switches.used = 0, 0, 0, 0
	a.frames = shrink(a.frames)
	a.bytes = shrink(a.bytes)
}

// Prepare gives the arena room for bytes bytes of copies (stack copies,
// build-ids) with its memory already mapped: a fresh buffer's pages are
// mapped by the kernel as they are first written, and on a virtual machine
// each such fault took 10-20 µs, in the middle of a recording's decoding.
// A live recorder prepares its arenas before its targets start.
func (a *Arena) Prepare(bytes int) {
	if cap(a.bytes) >= bytes {
		return
	}
	a.bytes = make([]byte, 0, bytes)
	touch(a.bytes[:bytes])
}

// touch writes a byte of each page of b, so that its pages are mapped.
func touch(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
}

// arenaKeep is the size of an arena's buffer kept whatever its use.
const arenaKeep = 1 << 20

// shrink empties an arena's buffer for reuse, or drops it when its last
// use took less than a quarter of it: buffers only grow (doubling) as a
// batch needs more, and a live backend's batches are far larger when its
// handler was held up a moment (a window being cut, a loaded machine).
// Kept, such a buffer would stay for good in each batch that ever had
// one; the arenas of a long recording grew by megabytes an hour.
func shrink[T any](b []T) []T {
	var zero T
	if int(unsafe.Sizeof(zero))*cap(b) > arenaKeep && len(b) < cap(b)/4 {
		return nil
	}
	return b[:0]
}

// chunk hands out the elements of a slice one by one. When it is used up
// a new one twice as long takes its place; the elements handed out of the
// old one stay valid, as the events pointing to them keep it alive.
type chunk[T any] struct {
	elems []T
	used  int
}

// next returns a zeroed element; a first chunk has least elements.
func (c *chunk[T]) next(least int) *T {
	if c.used == len(c.elems) {
		c.elems = make([]T, max(2*len(c.elems), least))
		c.used = 0
	}
	e := &c.elems[c.used]
	c.used++
	var zero T
	*e = zero
	return e
}

// giveBack returns the element next handed out last.
func (c *chunk[T]) giveBack() { c.used-- }

// Samples come by the thousand; side-band records by the few.
const (
	leastSamples = 256
	leastOthers  = 16
)

// frameSlice returns n uint64s of the arena. Growing it leaves slices
// handed out earlier in the old array, which stays valid.
func (a *Arena) frameSlice(n int) []uint64 {
	if len(a.frames)+n > cap(a.frames) {
		a.frames = make([]uint64, 0, max(2*cap(a.frames), 4096, n))
	}
	start := len(a.frames)
	a.frames = a.frames[:start+n]
	return a.frames[start : start+n : start+n]
}

// byteSlice returns src itself when the arena borrows, else a copy in the
// arena.
func (a *Arena) byteSlice(src []byte) []byte {
	n := len(src)
	if a.Borrow {
		return src[:n:n]
	}
	if len(a.bytes)+n > cap(a.bytes) {
		a.bytes = make([]byte, 0, max(2*cap(a.bytes), 1<<16, n))
	}
	start := len(a.bytes)
	a.bytes = append(a.bytes, src...)
	return a.bytes[start : start+n : start+n]
}

// ownBytes returns a copy of src that the arena owns, whether or not it
// borrows: for bytes made in a scratch buffer, not read from a record.
func (a *Arena) ownBytes(src []byte) []byte {
	if a.Borrow {
		return append([]byte(nil), src...)
	}
	borrow := a.Borrow
	a.Borrow = false
	b := a.byteSlice(src)
	a.Borrow = borrow
	return b
}
