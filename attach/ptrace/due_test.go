//go:build linux

package ptrace

import (
	"math"
	"testing"
	"time"
)

// TestDuePhase: where a thread's samples fall due in each interval of its
// CPU time moves by 0.6 interval at most each time (so that due points
// are 0.4 to 1.6 intervals apart), and over many samples it
// covers the interval evenly, as a reflected random walk does (so a loop
// that takes an interval of CPU time is sampled at every point of its
// round alike, not near one: see duePhase).
func TestDuePhase(t *testing.T) {
	const interval = int64(time.Millisecond)
	// Consecutive phases are correlated (a step is at most 0.6 of the
	// interval: the slowest mode of the walk keeps half of itself each
	// step), which a chi-square test of every phase would take for
	// unevenness; every thin-th is independent enough (0.5^10 = 0.001).
	const bins, n, thin = 20, 20000, 10
	var count [bins]float64
	phase := int64(0)
	for i := range n * thin {
		next := duePhase(phase, interval)
		if next < 0 || next >= interval {
			t.Fatalf("phase %d outside the interval", next)
		}
		if step := next - phase; step > interval*3/5 || step < -interval*3/5 {
			t.Fatalf("phase moved by %d, want 0.6 interval at most", step)
		}
		phase = next
		if i%thin == 0 {
			count[phase*bins/interval]++
		}
	}
	var chi2 float64
	for _, c := range count {
		chi2 += (c - n/bins) * (c - n/bins) / (n / bins)
	}
	// 19 degrees of freedom: above 43.8 one time in a thousand.
	if chi2 > 43.8 {
		t.Errorf("phases not even over the interval: chi-square %.1f over %d bins (%v)", chi2, bins, count)
	}
	if math.IsNaN(chi2) {
		t.Fatal("no phases")
	}
}
