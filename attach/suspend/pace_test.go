package suspend

import (
	"testing"
	"time"
)

// runPacer feeds p ticks that come at its interval (no jitter) and take
// work each, with threads busy threads, from start; it returns when the
// last one started.
func runPacer(p *pacer, start int64, ticks int, work time.Duration, threads int) int64 {
	for range ticks {
		// Each busy thread's sample stands for the CPU time since its
		// last: an interval.
		p.tick(start, work, threads, time.Duration(threads)*p.cur)
		start += int64(p.cur)
	}
	return start
}

// TestPacerCap: the interval is the one asked for while the ticks' work
// stays under suspendWorkShare of it, and rises within a few ticks to
// the work over the share when the work grows; it comes back down only
// when the work has stayed well below for pacerHold; a slow tick or two
// do not move it.
func TestPacerCap(t *testing.T) {
	p := newPacer(time.Millisecond)
	at := runPacer(p, 1e9, 200, 100*time.Microsecond, 2)
	if p.cur != time.Millisecond || p.capped || p.interval() != time.Millisecond {
		t.Fatalf("cheap ticks: interval %v (capped %v), reported %v", p.cur, p.capped, p.interval())
	}
	// Two slow ticks in a window (a list reconciled, a GC) change
	// nothing.
	p.tick(at, 50*time.Millisecond, 2, 2*p.cur)
	p.tick(at+int64(p.cur), 50*time.Millisecond, 2, 2*p.cur)
	at = runPacer(p, at+2*int64(p.cur), 50, 100*time.Microsecond, 2)
	if p.cur != time.Millisecond {
		t.Fatalf("two slow ticks moved the interval to %v", p.cur)
	}
	// Under Wine with two busy threads a tick takes a ms: the interval
	// rises at once to that over the share, times the tail (1.5 until
	// measured); with no tail (every tick alike) it settles at 4 ms.
	p = newPacer(time.Millisecond)
	at = runPacer(p, 1e9, pacerWindow, time.Millisecond, 2)
	if p.cur < 5900*time.Microsecond || p.cur > 6*time.Millisecond {
		t.Fatalf("after %d ticks of 1 ms: interval %v, want about 6 ms", pacerWindow, p.cur)
	}
	at = runPacer(p, at, 400, time.Millisecond, 2)
	if p.cur < 4*time.Millisecond || p.cur > 4200*time.Microsecond {
		t.Errorf("after 400 ticks of 1 ms: interval %v, want 4 to 4.2 ms", p.cur)
	}
	if got := p.interval(); got < 4*time.Millisecond || got > 4500*time.Microsecond {
		t.Errorf("reported interval %v, want 4 to 4.5 ms", got)
	}
	if got := p.perThread(); got < 500*time.Microsecond || got > 550*time.Microsecond {
		t.Errorf("per thread %v, want 500µs", got)
	}
	// One tick in five six times slower: the median stays, the tail
	// (the mean over the median) makes it twice as long.
	for i := range 500 {
		w := time.Millisecond
		if i%5 == 4 {
			w = 6 * time.Millisecond
		}
		p.tick(at, w, 2, 2*p.cur)
		at += int64(p.cur)
	}
	if p.cur < 7500*time.Microsecond || p.cur > 8500*time.Microsecond {
		t.Errorf("a long tail: interval %v, want about 8 ms", p.cur)
	}
	// A little cheaper: it stays (no back and forth); much cheaper: down
	// to what the work needs after pacerHold, and not below the interval
	// asked for.
	p = newPacer(time.Millisecond)
	at = runPacer(p, 1e9, 400, time.Millisecond, 2)
	settled := p.cur
	if settled < 4*time.Millisecond || settled > 4200*time.Microsecond {
		t.Fatalf("1 ms ticks: settled at %v, want 4 to 4.2 ms", settled)
	}
	at = runPacer(p, at, 100, 900*time.Microsecond, 2)
	if p.cur != settled {
		t.Errorf("work 10%% lower: interval %v, want it kept at %v", p.cur, settled)
	}
	at = runPacer(p, at, int(pacerHold/settled)-1, 400*time.Microsecond, 2)
	if p.cur != settled {
		t.Errorf("work 60%% lower for less than %v: interval %v, want it kept at %v", pacerHold, p.cur, settled)
	}
	at = runPacer(p, at, 100, 400*time.Microsecond, 2)
	if p.cur != 1600*time.Microsecond {
		t.Errorf("work 60%% lower: interval %v, want 1.6ms", p.cur)
	}
	runPacer(p, at, 400, 10*time.Microsecond, 2)
	if p.cur != time.Millisecond {
		t.Errorf("cheap again: interval %v, want 1ms", p.cur)
	}
}

// TestPacerInterval: the reported interval is the one the busy threads'
// samples were taken at, weighed by the CPU time they stand for (as
// record's check sums it): ticks with nothing to sample do not count.
func TestPacerInterval(t *testing.T) {
	p := newPacer(time.Millisecond)
	// Idle at the asked-for interval for a second, then busy at 4 to 6
	// ms: the interval rises once most of a window of ticks are busy.
	at := runPacer(p, 1e9, 1000, 10*time.Microsecond, 0)
	at = runPacer(p, at, 300, time.Millisecond, 1)
	if got := p.interval(); got < 4*time.Millisecond || got > 6*time.Millisecond {
		t.Errorf("idle then busy: reported %v, want 4 to 6 ms", got)
	}
	// A thread's short start at 1 ms (a little CPU time) and its workers'
	// long lives at 5 ms: the workers' interval.
	p = newPacer(time.Millisecond)
	p.capped = true
	for range 50 {
		p.tick(at, 0, 1, 200*time.Microsecond)
	}
	p.cur = 5 * time.Millisecond
	for range 200 {
		p.tick(at, 0, 2, 10*time.Millisecond)
	}
	// 10 ms of CPU asks for 10 samples, 2 s of it for 400.
	if got, want := p.interval(), 2010*time.Millisecond/410; got != want {
		t.Errorf("start then workers: reported %v, want %v", got, want)
	}
}

func TestWorkHist(t *testing.T) {
	var h workHist
	for range 90 {
		h.add(100 * time.Microsecond)
	}
	for range 10 {
		h.add(10 * time.Millisecond)
	}
	if q := h.quantile(0.5); q < 100*time.Microsecond || q > 120*time.Microsecond {
		t.Errorf("p50 %v, want just over 100µs", q)
	}
	if q := h.quantile(0.99); q < 10*time.Millisecond || q > 12*time.Millisecond {
		t.Errorf("p99 %v, want just over 10ms", q)
	}
	if s := h.String(); s != "p50<107 p90<107 p99<11585" {
		t.Errorf("String() = %q", s)
	}
}
