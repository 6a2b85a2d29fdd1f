//go:build linux

package perf

import (
	"encoding/binary"
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
)

// TestPyWalkerLoads: the kernel's verifier accepts the frame walker.
func TestPyWalkerLoads(t *testing.T) {
	w, err := newPyWalker(0)
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		t.Skipf("loading BPF programs is not permitted here: %v", err)
	}
	if errors.Is(err, unix.ENOSYS) {
		t.Skipf("this kernel has no BPF: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	w.close()
}

// fakeSnap builds a snapshot record as the program writes it.
func fakeSnap(tid, pid int, time int64, ip uint64, user bool, tstate uint64, ts []byte, cframe, first uint64, frames map[uint64][]byte, order []uint64) []byte {
	le := binary.LittleEndian
	rec := make([]byte, snapFrames+len(order)*snapSlot)
	le.PutUint64(rec[snapPidTgid:], uint64(pid)<<32|uint64(tid))
	le.PutUint64(rec[snapTime:], uint64(time))
	le.PutUint64(rec[snapIP:], ip)
	if user {
		le.PutUint64(rec[snapCS:], 0x33)
	} else {
		le.PutUint64(rec[snapCS:], 0x10)
	}
	le.PutUint64(rec[snapTState:], tstate)
	le.PutUint64(rec[snapCFrame:], cframe)
	le.PutUint64(rec[snapFirst:], first)
	le.PutUint32(rec[snapCount:], uint32(len(order)))
	if ts != nil {
		le.PutUint32(rec[snapTSOK:], 1)
		copy(rec[snapHeader:], ts)
	}
	for i, a := range order {
		slot := rec[snapFrames+i*snapSlot:]
		le.PutUint64(slot, a)
		copy(slot[8:], frames[a])
	}
	return rec
}

// liveMem is a process's memory as it is now: a map of ranges.
type liveMem map[uint64][]byte

func (m liveMem) Read(addr uint64, p []byte) error {
	b, ok := m[addr]
	if !ok || len(b) < len(p) {
		return errors.New("unmapped")
	}
	copy(p, b)
	return nil
}

func (m liveMem) ReadV(addrs []uint64, bufs [][]byte) int {
	for i := range addrs {
		if m.Read(addrs[i], bufs[i]) != nil {
			return i
		}
	}
	return len(addrs)
}

// TestSnapMemory: reads of what the program copied get the copy (the
// thread state, the _PyCFrame's frame pointer, each frame); other reads
// (code objects) go to the process; a batch mixes both and says how many
// it read from the first.
func TestSnapMemory(t *testing.T) {
	wk := attach.InterpWalk{TStateSpan: 64, FrameAt: 56, CFrameCurrent: 8, FrameSpan: 72, Back: 48}
	ts := make([]byte, 64)
	ts[0] = 0xaa
	f1, f2 := make([]byte, 72), make([]byte, 72)
	f1[0], f2[0] = 1, 2
	rec := fakeSnap(7, 5, 1000, 0x401000, true, 0x1000, ts, 0x2000, 0x3000,
		map[uint64][]byte{0x3000: f1, 0x4000: f2}, []uint64{0x3000, 0x4000})
	s := parseSnap(rec)
	if s == nil || s.tid != 7 || s.pid != 5 || s.time != 1000 || !s.user || len(s.frames) != 2 {
		t.Fatalf("parsed %+v", s)
	}
	live := liveMem{
		0x1000: make([]byte, 64), // the thread state now: not read
		0x3000: make([]byte, 72), // the frame now: another function
		0x9000: {0xcc, 0xdd},     // a code object
	}
	m := snapMemory{snap: s, walk: wk, live: live}
	got := make([]byte, 64)
	if err := m.Read(0x1000, got); err != nil || got[0] != 0xaa {
		t.Errorf("thread state: %v %x", err, got[0])
	}
	p := make([]byte, 8)
	if err := m.Read(0x2000+8, p); err != nil || binary.LittleEndian.Uint64(p) != 0x3000 {
		t.Errorf("current frame: %v %x", err, p)
	}
	fr := make([]byte, 72)
	if err := m.Read(0x4000, fr); err != nil || fr[0] != 2 {
		t.Errorf("frame: %v %x", err, fr[0])
	}
	if err := m.Read(0x4000, make([]byte, 73)); err == nil {
		t.Error("a read past what was copied was served")
	}
	code := make([]byte, 2)
	bufs := [][]byte{make([]byte, 72), code, make([]byte, 72)}
	if n := m.ReadV([]uint64{0x3000, 0x9000, 0x4000}, bufs); n != 3 || bufs[0][0] != 1 || code[0] != 0xcc || bufs[2][0] != 2 {
		t.Errorf("batch read %d: %x %x %x", n, bufs[0][0], code[0], bufs[2][0])
	}
	if n := m.ReadV([]uint64{0x3000, 0x8000, 0x4000}, bufs); n != 1 {
		t.Errorf("batch with an unmapped range read %d, want 1", n)
	}
	if m.ThreadState() != 0x1000 {
		t.Errorf("thread state at %x", m.ThreadState())
	}
	if parseSnap(rec[:snapFrames-1]) != nil || parseSnap(rec[:len(rec)-1]) != nil {
		t.Error("a short record parsed")
	}
}

// TestPyWalkerTake: a sample takes its own snapshot, the one nearest in
// time with its instruction pointer, even when the rings give a thread's
// samples out of time order; snapshots whose samples were dropped go.
func TestPyWalkerTake(t *testing.T) {
	w := &pyWalker{known: map[int]attach.InterpWalk{}, walks: map[int]attach.InterpWalk{}, listed: map[int]bool{}, snaps: map[int][]*pySnap{}}
	wk := attach.InterpWalk{TStateSpan: 64, FrameAt: 56, CFrameCurrent: -1, FrameSpan: 72, Back: 48}
	w.walks[5] = wk
	add := func(time int64, ip uint64, user bool) *pySnap {
		s := &pySnap{tid: 7, pid: 5, time: time, ip: ip, user: user}
		w.snaps[7] = append(w.snaps[7], s)
		return s
	}
	a := add(1_000_000, 0x10, true)
	b := add(2_000_000, 0x20, true)
	c := add(3_000_000, 0x99, false) // kernel mode: any user ip
	d := add(4_000_000, 0x40, true)  // its sample was dropped
	if s, _ := w.take(5, 7, 2_000_010, 0x20); s != b {
		t.Errorf("took %+v, want b", s)
	}
	if s, _ := w.take(5, 7, 1_000_005, 0x10); s != a {
		t.Errorf("an earlier sample took %+v, want a", s)
	}
	if s, _ := w.take(5, 7, 3_000_001, 0x77); s != c {
		t.Errorf("took %+v, want c", s)
	}
	if s, _ := w.take(5, 7, 4_000_001, 0x41); s != nil {
		t.Errorf("a sample at another instruction took %+v", s)
	}
	if s, _ := w.take(6, 7, 4_000_001, 0x40); s != nil {
		t.Errorf("another process's sample took %+v", s)
	}
	_ = d
	if s, wk2 := w.take(5, 7, 4_000_001, 0x40); s != d || wk2 != wk {
		t.Errorf("took %+v with %+v, want d", s, wk2)
	}
	add(5_000_000, 0x50, true)
	if s, _ := w.take(5, 7, 5_000_000+snapKeep+snapSlack+1, 0x50); s != nil || len(w.snaps[7]) != 0 {
		t.Errorf("a stale snapshot was kept or taken: %+v, %d left", s, len(w.snaps[7]))
	}
}

func FuzzParseSnap(f *testing.F) {
	wk := attach.InterpWalk{TStateSpan: 64, FrameAt: 56, CFrameCurrent: 8, FrameSpan: 72, Back: 48}
	f.Add(fakeSnap(7, 5, 1000, 0x401000, true, 0x1000, make([]byte, 64), 0x2000, 0x3000,
		map[uint64][]byte{0x3000: make([]byte, 72)}, []uint64{0x3000}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, rec []byte) {
		s := parseSnap(rec)
		if s == nil {
			return
		}
		m := snapMemory{snap: s, walk: wk, live: liveMem{}}
		for _, fr := range s.frames {
			m.Read(fr.addr, make([]byte, 72))
		}
		m.Read(s.tstate, make([]byte, 64))
		m.ReadV([]uint64{s.tstate, s.cframe + 8}, [][]byte{make([]byte, 64), make([]byte, 8)})
	})
}
