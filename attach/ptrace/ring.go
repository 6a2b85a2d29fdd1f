//go:build linux

package ptrace

import (
	"sync/atomic"

	"github.com/gprof-dev/gprof/event"
	"golang.org/x/sys/unix"
)

// What the stoppers hand the coordinator, through one ring each.

type entryKind uint8

const (
	onCPU     entryKind = iota // a sample of a thread running at the tick
	switchOut                  // with OffCPU: a thread found asleep, and its stack
	switchIn                   // with OffCPU: a thread asleep before runs again
	reaped                     // a thread's exit collected by its tracer (status set)
	denied                     // PTRACE_SEIZE refused
	reapOnly                   // (pending only) a thread killed while stopped
)

// entry is one thing a stopper saw. stack, for a sample, is the copy
// that lives in the ring's slot.
type entry struct {
	kind     entryKind
	pid, tid int
	cpu      int
	time     int64 // the tick, on the monotonic clock
	run      int64 // the thread's CPU time at the tick
	// gen is the turn of sampling on (control.go) of the tick, since
	// the thread's CPU time at its first look in that turn.
	gen      uint64
	since    int64
	regs     event.Regs
	inKernel bool
	stack    []byte
	interp   any // Options.Interp's, read while stopped
	wchan    string
	asleepAt int64
	status   unix.WaitStatus
}

// ring is a single-producer, single-consumer queue of entries: the
// stopper writes at head, the coordinator reads from tail, and neither
// ever waits for the other. A full ring drops the new entry (counted).
type ring struct {
	slots     []entry
	head      atomic.Uint64 // written by the stopper
	tail      atomic.Uint64 // written by the coordinator
	stackSize int
}

// ringSize is how many entries a stopper may have outstanding; the
// coordinator empties the rings every few milliseconds.
const ringSize = 256

func newRing(n, stackSize int) *ring {
	return &ring{slots: make([]entry, n), stackSize: stackSize}
}

// warm gives the first slots their stack buffers, written to, up to
// budget bytes, before sampling starts. A fresh buffer's pages are
// faulted in by the first copy into them, while its thread is stopped:
// on a virtual machine that made the stack copy 53 µs (median) rather
// than 22, and the thread's whole stop 114 µs rather than 59, over the
// first lap of the ring (a 64 ms program never got past it).
func (r *ring) warm(budget int) {
	page := unix.Getpagesize()
	for i := range min(len(r.slots), budget/max(r.stackSize, 1)) {
		s := &r.slots[i]
		if cap(s.stack) < r.stackSize {
			s.stack = make([]byte, 0, r.stackSize)
		}
		b := s.stack[:r.stackSize]
		for j := 0; j < len(b); j += page {
			b[j] = 0
		}
	}
}

// warmBytes is how much of its ring's stack buffers a stopper faults in
// as it starts: 32 slots of the default stack size, 512 KiB a CPU (about
// what perf's default ring takes).
const warmBytes = 512 << 10

// slot returns the next free slot, with a stack buffer, or nil when the
// ring is full. Past the slots warmed at the start, the buffer is
// allocated on first use, so that stoppers of CPUs where nothing runs
// cost no more than those.
func (r *ring) slot() *entry {
	h := r.head.Load()
	if h-r.tail.Load() >= uint64(len(r.slots)) {
		return nil
	}
	s := &r.slots[h%uint64(len(r.slots))]
	if cap(s.stack) < r.stackSize {
		s.stack = make([]byte, 0, r.stackSize)
	}
	return s
}

// commit fills slot (from slot) with e and publishes it. e.stack is nil or
// a prefix of the slot's own buffer.
func (r *ring) commit(slot *entry, e entry) {
	buf := slot.stack[:0]
	*slot = e
	if e.stack == nil {
		slot.stack = buf
	}
	r.head.Add(1)
}

// pending returns the entries published and not yet consumed; they stay
// valid until consume.
func (r *ring) pending(out []*entry) []*entry {
	for t, h := r.tail.Load(), r.head.Load(); t < h; t++ {
		out = append(out, &r.slots[t%uint64(len(r.slots))])
	}
	return out
}

// consume frees the n oldest entries.
func (r *ring) consume(n int) {
	r.tail.Add(uint64(n))
}
