package mach

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestTicksNoLockstep samples a program whose round takes exactly one
// interval, 50:30:20 in three parts, at the ticks' instants: the shares
// must be the program's within the sampling error, as a perfect random
// sampler's would, where a fixed ticker sees one part only. The mean
// interval must be the one asked for.
func TestTicksNoLockstep(t *testing.T) {
	const interval = time.Millisecond
	start := time.Unix(1000, 0)
	tk := newTicks(start, interval, rand.New(rand.NewPCG(1, 2)))
	const n = 20000
	var hits [3]int
	var at time.Time
	for range n {
		at = tk.next(start) // never behind: now is the start
		phase := float64(at.Sub(start)%interval) / float64(interval)
		switch {
		case phase < 0.5:
			hits[0]++
		case phase < 0.8:
			hits[1]++
		default:
			hits[2]++
		}
	}
	for i, want := range []float64{0.5, 0.3, 0.2} {
		got := float64(hits[i]) / n
		sigma := math.Sqrt(want * (1 - want) / n)
		t.Logf("part %d: share %.4f, want %.2f ± %.4f (4σ)", i, got, want, 4*sigma)
		if math.Abs(got-want) > 4*sigma {
			t.Errorf("part %d: share %.4f, want %.2f within %.4f", i, got, want, 4*sigma)
		}
	}
	mean := at.Sub(start) / n
	t.Logf("mean interval %v, want %v within 1%%", mean, interval)
	if math.Abs(float64(mean-interval)) > 0.01*float64(interval) {
		t.Errorf("mean interval %v, want %v", mean, interval)
	}
}

// TestTicksBehind checks that a sampler held up long is not made to tick
// in a burst to catch up.
func TestTicksBehind(t *testing.T) {
	start := time.Unix(1000, 0)
	tk := newTicks(start, time.Millisecond, rand.New(rand.NewPCG(3, 4)))
	now := start.Add(time.Second)
	if got := tk.next(now); got != now {
		t.Errorf("after a 1 s stall the next tick is due %v after now, want at once", got.Sub(now))
	}
	if got := tk.next(now); got.Sub(now) < time.Millisecond/2 {
		t.Errorf("the tick after is %v after the last, want at least half an interval", got.Sub(now))
	}
}
