package record

import (
	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/profile"
)

// Sampling off and on (attach.Control). The dispatcher already drops what
// a backend delivers while sampling is off; here the builder hears of each
// change in the order of the event stream, so that a thread's stretch off
// the CPU that sampling off interrupts is sampled only up to there, and
// the profile gets the stretches with sampling off as paused ranges.

// toggles follows a Control's changes in the event stream.
type toggles struct {
	c    *attach.Control
	seen int // changes the builder has heard of
}

// follow tells the builder of the changes made up to monotonic time t.
func (tg *toggles) follow(b *builder, t int64) {
	for _, c := range tg.c.LogFrom(tg.seen) {
		if c.Time > t {
			return
		}
		tg.seen++
		if !c.On {
			// Off-CPU time is not sampled while sampling is off: the
			// stretches going on are sampled up to here. A thread
			// still off the CPU when sampling is on again counts as
			// on it until its next switch.
			b.flushAllOff(c.Time)
		}
	}
}

// pausedRanges are the stretches with sampling off between monotonic
// times from and to, in ns since from: a stretch going on at to has End
// -1.
func pausedRanges(c *attach.Control, from, to int64) []profile.PausedRange {
	var out []profile.PausedRange
	off, offAt := !c.StartsOn(), from
	add := func(end int64) {
		if end > from || end < 0 {
			r := profile.PausedRange{Start: max(offAt-from, 0), End: -1, Reason: profile.PausedByProfiler}
			if end >= 0 {
				r.End = end - from
			}
			out = append(out, r)
		}
	}
	for _, t := range c.Log() {
		if t.Time >= to {
			break
		}
		switch {
		case !t.On && !off:
			off, offAt = true, t.Time
		case t.On && off:
			off = false
			add(t.Time)
		}
	}
	if off {
		add(-1)
	}
	return out
}
