//go:build linux

package perf

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestBlocksNoLockstep samples a program whose loop of three functions
// (5:3:2) has a period near the interval, in 400 runs of 1500 samples, as
// a pacer does (runs of pacerEvery firings at a spacing from blockPeriod,
// the next run drawn a few µs after the last firing): the shares come out
// as a perfect random sampler's would (a share p of N samples varies by
// sqrt(p(1-p)/N)), whatever the period; a fixed interval does not.
func TestBlocksNoLockstep(t *testing.T) {
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
			var cnt [3]float64
			const n = 1500
			at := rng.Int64N(int64(interval))
			d := int64(interval)
			for i := 0; i < n; i++ {
				if !fixed && i%pacerEvery == 0 {
					at += int64(pacerMargin) + rng.Int64N(20000)
					d = blockPeriod(rng, int64(interval))
				}
				at += d
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
