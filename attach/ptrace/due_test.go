//go:build linux

package ptrace

import (
	"math"
	"testing"
	"time"
)

// TestDuePhase: where a thread's samples fall due in each interval of its
// CPU time moves by half an interval at most each time (so that due points
// are half an interval to one and a half apart), and over many samples it
// covers the interval evenly, as a reflected random walk does (so a loop
// that takes an interval of CPU time is sampled at every point of its
// round alike, not near one: see duePhase).
func TestDuePhase(t *testing.T) {
	const interval = int64(time.Millisecond)
	const bins, n = 20, 200000
	var count [bins]float64
	phase := int64(0)
	for range n {
		next := duePhase(phase, interval)
		if next < 0 || next >= interval {
			t.Fatalf("phase %d outside the interval", next)
		}
		if step := next - phase; step > interval/2 || step < -interval/2 {
			t.Fatalf("phase moved by %d, want half an interval at most", step)
		}
		phase = next
		count[phase*bins/interval]++
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
