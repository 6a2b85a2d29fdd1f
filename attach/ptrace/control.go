//go:build linux

package ptrace

import (
	"time"

	"github.com/gprof-dev/gprof/event"
)

// Sampling off and on (attach.Control: record -D and --control). While
// sampling is off the stoppers stop no thread and read nothing: they wake
// every pausedPoll only to notice it is on again, so a stretch with
// sampling off costs the targets nothing. The coordinator keeps finding
// threads, names and mappings meanwhile (/proc reads, which do not stop
// the targets), so that samples are named as soon as sampling is on.
//
// When sampling is on again, what a thread ran while it was off is no
// sample's: each thread's first look after that takes its CPU time as the
// new base (rebase), for both when its next sample is due and the CPU
// time that sample stands for.

// pausedPoll is how often a stopper looks whether sampling is on again.
const pausedPoll = 5 * time.Millisecond

// applyControl turns sampling off or on as the Control asks, if it asks
// anything: the stoppers see it at their next tick.
func (s *ptSampler) applyControl() {
	c := s.opts.Control
	if c == nil {
		return
	}
	on, seq, ok := c.Pending()
	if !ok {
		return
	}
	if on == !s.paused.Load() {
		c.Applied(on, event.Now(), seq)
		return
	}
	if on {
		t := event.Now()
		s.gen.Add(1)
		s.paused.Store(false)
		c.Applied(true, t, seq)
		return
	}
	s.paused.Store(true)
	c.Applied(false, event.Now(), seq)
}

// rebase starts a thread's count of CPU time afresh at its first look
// after sampling was turned on again; sched is what that look read.
func (w *worker) rebase(th *shared, sched ptSched) {
	if g := w.s.gen.Load(); th.gen != g {
		th.gen = g
		th.lastRun = sched.run
		th.resumeRun = sched.run
		th.credit = 0
	}
}

// rebased gives a thread its CPU time base afresh at its first sample
// taken after sampling was turned on again (see rebase).
func (th *ptThread) rebased(e *entry) {
	if e.gen != th.gen {
		th.gen = e.gen
		th.base = e.since
	}
}
