//go:build linux

package ptrace

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestDuePhaseNoLockstep plays a stopper against a busy thread whose loop
// of three functions (5:3:2) takes one interval of its CPU time, in 400
// runs of 1,000 samples. As the stopper now ticks, when the thread falls
// due at a phase that random-walks around the interval (duePhase), the
// shares vary as a perfect random sampler's would. As it ticked before,
// at jittered moments, with the thread due at half an interval of credit
// and owed samples caught up at twice the rate, they did not: the ticks'
// randomness only blurred a fixed period (2.2 errors rms here; 5 points
// off in real runs).
func TestDuePhaseNoLockstep(t *testing.T) {
	const interval = int64(time.Millisecond)
	truth := []float64{0.5, 0.3, 0.2}
	fn := func(pos int64) int {
		switch ph := float64(pos%interval) / float64(interval); {
		case ph < 0.5:
			return 0
		case ph < 0.8:
			return 1
		}
		return 2
	}
	rng := rand.New(rand.NewPCG(7, 8))
	jit := func() int64 { return interval/2 + rng.Int64N(interval) }
	rmsZ := func(old bool) float64 {
		var sum float64
		var k int
		for run := 0; run < 400; run++ {
			var cnt [3]float64
			const n = 1000
			pos := rng.Int64N(interval) // the thread's CPU time: it always runs
			credit, due := int64(0), rng.Int64N(interval)
			if old {
				credit, due = rng.Int64N(interval)-interval/2, interval/2
			}
			owed := false
			for got := 0; got < n; {
				var gap int64
				switch {
				case old && owed:
					gap = jit() / 2
				case old:
					gap = jit()
				default:
					gap = min(max(due-credit, interval/8), 2*interval)
				}
				// A stop lands some microseconds after the tick.
				gap += rng.Int64N(interval / 20)
				pos += gap
				credit += gap
				if credit < due {
					continue
				}
				cnt[fn(pos)]++
				got++
				credit -= interval
				if !old {
					due = duePhase(due, interval)
				}
				owed = credit >= due
			}
			for f, p := range truth {
				z := (cnt[f]/n - p) / math.Sqrt(p*(1-p)/n)
				sum += z * z
				k++
			}
		}
		return math.Sqrt(sum / float64(k))
	}
	z, old := rmsZ(false), rmsZ(true)
	t.Logf("rms z: %.2f, %.2f as it ticked before", z, old)
	if z > 1.25 {
		t.Errorf("the shares vary by %.2f sampling errors (rms), want at most 1.25", z)
	}
	if old < 1.5 {
		t.Errorf("as it ticked before: rms z %.2f, want the lockstep this test is about (> 1.5)", old)
	}
}
