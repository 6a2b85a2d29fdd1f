//go:build linux

package main

import (
	"fmt"
	"strings"
	"testing"
)

// briefLog writes brief's log lines for a thread that reads its clocks
// every step ns of wall and CPU time alike, from 0 to end.
func briefLog(end, step int64, jumpAt, jump int64) []byte {
	var b strings.Builder
	var cpu int64
	for w := int64(0); w <= end; w += step {
		if w == jumpAt {
			cpu += jump // the host took the CPU away, and the clock ran on
		}
		fmt.Fprintf(&b, "at 7 %d %d\n", w, cpu)
		cpu += step
	}
	return []byte(b.String())
}

func TestBurnGap(t *testing.T) {
	const ms = 1_000_000
	at := []int64{1 * ms, 2 * ms, 4 * ms, 5 * ms}
	// The stretch from 2 to 4 ms is the longest; the ones before the
	// first sample and after the last count too.
	gap, n := burnGap(briefLog(6*ms, 5_000, -1, 0), at)
	if gap != 2*ms || n != 4 {
		t.Errorf("burnGap = %v ns, %d samples; want %v, 4", gap, n, 2*ms)
	}
	// A jump of 3 ms of the thread's clock between two readings 5 µs
	// apart is steal: all but 0.5 ms of it comes out, so the stretch it
	// fell in (1 to 2 ms) is 1.5 ms of CPU time, not 4.
	gap, _ = burnGap(briefLog(6*ms, 5_000, 1_500_000, 3*ms), at)
	if gap != 2*ms {
		t.Errorf("with a jump, burnGap = %v ns; want %v (the jump taken out)", gap, 2*ms)
	}
	// Samples outside the burn do not count.
	if _, n := burnGap(briefLog(6*ms, 5_000, -1, 0), []int64{-5, 3 * ms, 7 * ms}); n != 1 {
		t.Errorf("burnGap counted %d samples in the burn; want 1", n)
	}
	if gap, _ := burnGap([]byte("no log\n"), at); gap != -1 {
		t.Errorf("without a log, burnGap = %v; want -1", gap)
	}
}
