//go:build linux

package perf

import (
	"encoding/binary"

	"github.com/gprof-dev/gprof/attach"
)

// pySnap is one snapshot the frame walker wrote (see pywalk.go): the bytes
// of a thread's state and frames as they were at a sample.
type pySnap struct {
	tid, pid int
	time     int64
	ip       uint64
	user     bool // ip is the user-mode one (a sample in user mode)
	tstate   uint64
	ts       []byte // nil when the thread state could not be copied
	cframe   uint64 // _PyCFrame (3.11, 3.12) or 0
	frame    uint64 // the innermost frame
	frames   []snapFrame
}

type snapFrame struct {
	addr uint64
	b    []byte
}

// parseSnap reads a snapshot record, or returns nil for one too short to
// be one. What it keeps is copied out of rec.
func parseSnap(rec []byte) *pySnap {
	if len(rec) < snapFrames {
		return nil
	}
	le := binary.LittleEndian
	pt := le.Uint64(rec[snapPidTgid:])
	s := &pySnap{tid: int(uint32(pt)), pid: int(pt >> 32), time: int64(le.Uint64(rec[snapTime:])),
		ip: le.Uint64(rec[snapIP:]), user: le.Uint64(rec[snapCS:])&3 == 3,
		tstate: le.Uint64(rec[snapTState:]), cframe: le.Uint64(rec[snapCFrame:]), frame: le.Uint64(rec[snapFirst:])}
	if le.Uint32(rec[snapTSOK:]) != 0 {
		s.ts = append([]byte(nil), rec[snapHeader:snapFrames]...)
	}
	n := int(le.Uint32(rec[snapCount:]))
	if n > snapDepth || snapFrames+n*snapSlot > len(rec) {
		return nil
	}
	data := append([]byte(nil), rec[snapFrames:snapFrames+n*snapSlot]...)
	s.frames = make([]snapFrame, n)
	for i := range s.frames {
		slot := data[i*snapSlot:]
		s.frames[i] = snapFrame{addr: le.Uint64(slot), b: slot[8:snapSlot]}
	}
	return s
}

// serve copies into p what the snapshot holds of [addr, addr+len(p)):
// the thread state, the _PyCFrame's pointer to the innermost frame, and
// each frame, all read from their start. It reports whether it held it.
// The program copied as many bytes as the walk reads of each (the spans
// of attach.InterpWalk); a longer read is not served.
func (s *pySnap) serve(addr uint64, p []byte, w attach.InterpWalk) bool {
	switch {
	case s.ts != nil && addr == s.tstate && len(p) <= w.TStateSpan:
		copy(p, s.ts)
		return true
	case s.cframe != 0 && w.CFrameCurrent >= 0 && addr == s.cframe+uint64(w.CFrameCurrent) && len(p) == 8:
		binary.LittleEndian.PutUint64(p, s.frame)
		return true
	}
	if len(p) > w.FrameSpan {
		return false
	}
	for _, f := range s.frames {
		if f.addr == addr {
			copy(p, f.b)
			return true
		}
	}
	return false
}

// snapMemory reads a process's memory as it was at a snapshot where the
// snapshot holds it, and as it is now elsewhere (code objects, strings:
// what does not change while its function lives).
type snapMemory struct {
	snap *pySnap
	walk attach.InterpWalk
	live attach.Memory
}

// ThreadState is where the copied thread state is (python.Copy).
func (m snapMemory) ThreadState() uint64 {
	if m.snap.ts == nil {
		return 0
	}
	return m.snap.tstate
}

func (m snapMemory) Read(addr uint64, p []byte) error {
	if m.snap.serve(addr, p, m.walk) {
		return nil
	}
	return m.live.Read(addr, p)
}

// ReadV serves what the snapshot holds and reads the rest in one call.
func (m snapMemory) ReadV(addrs []uint64, bufs [][]byte) int {
	var rest []int
	for i := range addrs {
		if !m.snap.serve(addrs[i], bufs[i], m.walk) {
			rest = append(rest, i)
		}
	}
	if len(rest) == 0 {
		return len(addrs)
	}
	la := make([]uint64, len(rest))
	lb := make([][]byte, len(rest))
	for k, i := range rest {
		la[k], lb[k] = addrs[i], bufs[i]
	}
	if n := m.live.ReadV(la, lb); n < len(rest) {
		return rest[n] // the first range not read whole
	}
	return len(addrs)
}
