package python

// Walk is how thread tid's frames are reached from its thread state (the
// fields of attach.InterpWalk, which it converts to): for a copy of them
// made at the sample, by a program that knows no Python.
type Walk struct {
	TState        uint64
	TStateSpan    int
	FrameAt       int64
	CFrameCurrent int64
	FrameSpan     int
	Back          int64

	Threads    uint64
	Next       int64
	ThreadID   int64
	IDIndirect bool
	IDOffset   int64
}

// Walk says how to walk thread tid's frames, once a Read found its
// thread state (TState 0 where not this thread's), and how to find the
// thread states of the process's main interpreter; false before a Read
// found any.
func (r *Reader) Walk(pid, tid int) (Walk, bool) {
	r.mu.Lock()
	p := r.procs[pid]
	r.mu.Unlock()
	if p == nil {
		return Walk{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.interp == nil || p.mainInterp == 0 {
		return Walk{}, false
	}
	l := p.interp.lay
	w := Walk{TState: p.tstates[tid], TStateSpan: l.tstateSpan(), FrameAt: l.tsFrame, CFrameCurrent: -1, FrameSpan: l.frameSpan(), Back: l.frBack,
		Threads: p.mainInterp + uint64(l.threadsHead), Next: l.tsNext, ThreadID: l.tsNativeID}
	if l.tsCFrame >= 0 {
		w.FrameAt, w.CFrameCurrent = l.tsCFrame, l.cfCurrent
	}
	if l.tsNativeID < 0 {
		// Before 3.11 the thread state holds the pthread_t, whose
		// structure holds the id where isThread found it.
		w.ThreadID, w.IDIndirect, w.IDOffset = l.tsThreadID, true, p.tidOff
		if p.tidOff == 0 {
			w.Threads = 0
		}
	}
	return w, true
}
