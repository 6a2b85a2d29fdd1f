//go:build linux

package perf

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestScheduleStratified: the instants a pacer sets are one per slot (so
// the rate is the one asked for, exactly), between half an interval and two
// apart, and uniform within their slot; a pacer that is sometimes late
// loses the slots that passed, no more.
func TestScheduleStratified(t *testing.T) {
	const interval = time.Millisecond
	const n = 200000
	for _, late := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(1, 2))
		wake := rand.New(rand.NewPCG(3, 4))
		sc := newSchedule(0, interval, rng)
		var bins [10]int
		last, count := int64(-1), 0
		now := int64(0)
		for i := 0; i < n; i++ {
			at := sc.next(now)
			if gap := at - last; last >= 0 && !late && (gap < int64(interval)/2 || gap >= 2*int64(interval)) {
				t.Fatalf("instant %d is %v after the last, want %v to %v", i, time.Duration(gap), interval/2, 2*interval)
			}
			if at < now+int64(interval)/4 {
				t.Fatalf("late=%v: instant %d set %v after now", late, i, time.Duration(at-now))
			}
			slot := at / int64(interval)
			bins[10*(at%int64(interval))/int64(interval)]++
			if slot != int64(count) {
				count = int(slot)
			}
			count++
			last = at
			// The pacer wakes just after the instant; now and then (late)
			// a few intervals after it.
			now = at + 5000
			if late && wake.IntN(50) == 0 {
				now += wake.Int64N(3 * int64(interval))
			}
		}
		missed := count - n
		margin(t, "slots without an instant", float64(missed), 0)
		if !late && missed != 0 {
			t.Errorf("%d of %d slots had no instant, want none", missed, count)
		}
		// Uniform within the slot: each tenth within 3% of its share (a
		// tenth's count varies by 0.7% of it).
		for i, b := range bins {
			share := float64(b) / n
			if math.Abs(share-0.1) > 0.003 {
				t.Errorf("late=%v: %.4f of the instants in tenth %d of their slot, want 0.1 ± 0.003", late, share, i)
			}
		}
	}
}

// TestScheduleNoLockstep samples a program whose loop of three functions
// (5:3:2) has a period near the interval, in 400 runs of 1500 samples: the
// shares come out as a perfect random sampler's would (a share p of N
// samples varies by sqrt(p(1-p)/N)), whatever the period; a fixed interval
// does not.
func TestScheduleNoLockstep(t *testing.T) {
	const interval = time.Millisecond
	phaseOf := func(ph float64) int {
		switch {
		case ph < 0.5:
			return 0
		case ph < 0.8:
			return 1
		}
		return 2
	}
	truth := []float64{0.5, 0.3, 0.2}
	rng := rand.New(rand.NewPCG(5, 6))
	rmsZ := func(period float64, fixed bool) float64 {
		var sum float64
		var k int
		for run := 0; run < 400; run++ {
			sc := newSchedule(rng.Int64N(int64(interval)), interval, rng)
			var cnt [3]float64
			const n = 1500
			at := int64(0)
			for i := 0; i < n; i++ {
				if fixed {
					at += int64(interval)
				} else {
					at = sc.next(at)
				}
				cnt[phaseOf(math.Mod(float64(at)/period, 1))]++
			}
			for f, p := range truth {
				z := (cnt[f]/n - p) / math.Sqrt(p*(1-p)/n)
				sum += z * z
				k++
			}
		}
		return math.Sqrt(sum / float64(k))
	}
	for _, ratio := range []float64{1, 0.5, 2, 0.73, 1.5, 1.0005, 3} {
		period := ratio * float64(interval)
		z := rmsZ(period, false)
		margin(t, "rms z of the shares, loop of "+time.Duration(period).String(), z, 1.25)
		if z > 1.25 {
			t.Errorf("loop of %v: the shares vary by %.2f sampling errors (rms), want at most 1.25", time.Duration(period), z)
		}
	}
	if z := rmsZ(float64(interval), true); z < 3 {
		t.Errorf("a fixed interval on a loop of the same period: rms z %.2f, want the lockstep this test is about (> 3)", z)
	}
}

func margin(t *testing.T, what string, got, bound float64) {
	t.Helper()
	t.Logf("margin: %s %.4g, bound %.4g", what, got, bound)
}
