package mach

import (
	"math/rand/v2"
	"time"
)

// ticks paces the sampler: tick n comes at a random 0.5 to 1.5 intervals
// after tick n-1, counted from when n-1 was due rather than when it ran,
// so that the mean rate is the one asked for. A fixed ticker can lock in
// phase with a target whose own loop takes an interval (or a whole number
// of them) and sample the same instants of every round, showing some
// functions more than their share; random ticks with the same mean
// cannot. (ptrace and the Windows suspend sampler draw theirs the same
// way.)
type ticks struct {
	interval time.Duration
	due      time.Time
	rng      *rand.Rand
}

func newTicks(start time.Time, interval time.Duration, rng *rand.Rand) *ticks {
	return &ticks{interval: interval, due: start, rng: rng}
}

// next returns when the next tick is due. One that falls behind now (a
// sampler held up for several intervals) is due at once, and the ones it
// missed are not made up for: they would come in a burst at one instant.
func (t *ticks) next(now time.Time) time.Time {
	t.due = t.due.Add(t.interval/2 + time.Duration(t.rng.Int64N(int64(t.interval))))
	if t.due.Before(now.Add(-t.interval)) {
		t.due = now
	}
	return t.due
}
