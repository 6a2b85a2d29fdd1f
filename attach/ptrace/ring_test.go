//go:build linux

package ptrace

import (
	"os"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The ring hands entries from one stopper to the coordinator in order,
// keeps each sample's stack in its slot, and refuses entries when full
// rather than overwrite ones not yet taken.
func TestRing(t *testing.T) {
	r := newRing(4, 16)
	for i := 0; i < 6; i++ {
		slot := r.slot()
		if i >= 4 {
			if slot != nil {
				t.Fatalf("entry %d: a slot in a full ring", i)
			}
			continue
		}
		stack := append(slot.stack[:0], byte(i), byte(i))
		r.commit(slot, entry{tid: i, stack: stack})
	}
	got := r.pending(nil)
	if len(got) != 4 {
		t.Fatalf("%d entries, want 4", len(got))
	}
	for i, e := range got {
		if e.tid != i || len(e.stack) != 2 || e.stack[0] != byte(i) {
			t.Errorf("entry %d: tid %d stack %v", i, e.tid, e.stack)
		}
	}
	r.consume(3)
	// Around the end: slots are reused, with their buffers.
	for i := 4; i < 7; i++ {
		slot := r.slot()
		if slot == nil {
			t.Fatalf("entry %d: no slot after consume", i)
		}
		r.commit(slot, entry{tid: i})
	}
	got = r.pending(nil)
	if len(got) != 4 || got[0].tid != 3 || got[3].tid != 6 {
		t.Errorf("after wrapping: %d entries from tid %d", len(got), got[0].tid)
	}
	for _, e := range got[1:] {
		if e.stack == nil || cap(e.stack) < 16 {
			t.Errorf("tid %d lost its slot's buffer", e.tid)
		}
	}
}

// A warmed ring's first slots have their stack buffers, their pages in
// memory, before any sample: taking one allocates nothing, and a stack
// copied into it faults nothing in while its thread is stopped.
func TestRingWarm(t *testing.T) {
	const stack = 256 << 10 // a large object: fresh pages from the OS
	r := newRing(8, stack)
	r.warm(3 * stack)
	page := os.Getpagesize()
	for i, s := range r.slots {
		if i >= 3 {
			if cap(s.stack) != 0 {
				t.Errorf("slot %d warmed past the budget", i)
			}
			continue
		}
		if cap(s.stack) < stack {
			t.Fatalf("slot %d: a buffer of %d bytes, want %d", i, cap(s.stack), stack)
		}
		b := s.stack[:stack]
		off := (page - int(uintptr(unsafe.Pointer(&b[0])))%page) % page
		whole := b[off : off+(len(b)-off)/page*page]
		vec := make([]byte, len(whole)/page)
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&whole[0])), uintptr(len(whole)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			t.Fatalf("mincore: %v", e)
		}
		out := 0
		for _, v := range vec {
			if v&1 == 0 {
				out++
			}
		}
		if out > 0 {
			t.Errorf("slot %d: %d of its %d pages not in memory", i, out, len(vec))
		}
	}
	if n := testing.AllocsPerRun(1, func() {
		for range 3 {
			r.commit(r.slot(), entry{})
		}
		r.consume(3)
		r.head.Store(0)
		r.tail.Store(0)
	}); n != 0 {
		t.Errorf("taking the warmed slots allocated %v times", n)
	}
}

// Threads pushed from many goroutines all come out of an inbox, once.
func TestInbox(t *testing.T) {
	var in inbox
	const n = 1000
	ths := make([]*shared, n)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 4 {
				ths[i] = &shared{tid: i}
				in.push(ths[i])
			}
		}()
	}
	var got []*shared
	for len(got) < n {
		got = in.take(got)
		if len(got) < n {
			wg.Wait()
		}
	}
	seen := map[int]bool{}
	for _, th := range got {
		if seen[th.tid] || th.next != nil {
			t.Fatalf("thread %d came out twice or still linked", th.tid)
		}
		seen[th.tid] = true
	}
	if len(seen) != n {
		t.Errorf("%d threads out of %d", len(seen), n)
	}
}
