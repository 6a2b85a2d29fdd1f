package suspend

import (
	"strings"
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
// the work over the share when the work grows, comes back down when it
// falls well below, and counts threads that stopped running for
// pacerHold; a slow tick or two do not move it.
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
	// rises at once to that over the share (q), times the tail (1.5 until
	// measured); with no tail (every tick alike) it comes down to q, or
	// near it (it moves only when off by a quarter or more).
	q := time.Duration(float64(time.Millisecond) / suspendWorkShare)
	within := func(d time.Duration, lo, hi float64) bool {
		return d >= time.Duration(lo*float64(q)) && d <= time.Duration(hi*float64(q))
	}
	p = newPacer(time.Millisecond)
	at = runPacer(p, 1e9, pacerWindow, time.Millisecond, 2)
	if !within(p.cur, 1.45, 1.5) {
		t.Fatalf("after %d ticks of 1 ms: interval %v, want about %v", pacerWindow, p.cur, 3*q/2)
	}
	at = runPacer(p, at, 400, time.Millisecond, 2)
	settled := p.cur
	if !within(settled, 1, 1.125) {
		t.Errorf("after 400 ticks of 1 ms: interval %v, want %v to %v", settled, q, q*9/8)
	}
	if got := p.interval(); !within(got, 1, 1.15) {
		t.Errorf("reported interval %v, want %v to %v", got, q, q*115/100)
	}
	if got := p.perThread(); got < 500*time.Microsecond || got > 550*time.Microsecond {
		t.Errorf("per thread %v, want 500µs", got)
	}
	// A little cheaper: it stays (no back and forth).
	at = runPacer(p, at, 100, 900*time.Microsecond, 2)
	if p.cur != settled {
		t.Errorf("work 10%% lower: interval %v, want it kept at %v", p.cur, settled)
	}
	// One tick in five six times slower: the median stays, the tail
	// (the mean over the median, each counted up to five times it) makes
	// it 1.8 times as long.
	for i := range 500 {
		w := time.Millisecond
		if i%5 == 4 {
			w = 6 * time.Millisecond
		}
		p.tick(at, w, 2, 2*p.cur)
		at += int64(p.cur)
	}
	if !within(p.cur, 1.7, 1.95) {
		t.Errorf("a long tail: interval %v, want about %v", p.cur, q*18/10)
	}
	// Much cheaper: down within a window of ticks, to what the work
	// needs, and not below the interval asked for.
	at = runPacer(p, at, 2*pacerWindow, 400*time.Microsecond, 2)
	if !within(p.cur, 0.4, 0.875) {
		t.Errorf("work 60%% lower: interval %v, want %v to %v", p.cur, q*4/10, q*7/8)
	}
	at = runPacer(p, at, 400, 10*time.Microsecond, 2)
	if p.cur != time.Millisecond {
		t.Errorf("cheap again: interval %v, want 1ms", p.cur)
	}
	// A run of slow ticks (under Wine, a launched command's loader at
	// work) raises the interval far; it comes back within a few ticks
	// after, however long they are.
	p = newPacer(time.Millisecond)
	at = runPacer(p, 1e9, 50, 200*time.Microsecond, 1)
	at = runPacer(p, at, 6, 40*time.Millisecond, 1)
	if p.cur < 50*time.Millisecond {
		t.Errorf("after 6 ticks of 40 ms: interval %v, want it far longer", p.cur)
	}
	runPacer(p, at, pacerWindowMin+1, 200*time.Microsecond, 1)
	if p.cur > 5*time.Millisecond {
		t.Errorf("%d cheap ticks after slow ones: interval %v, want it back under 5 ms", pacerWindowMin+1, p.cur)
	}
	// One of two threads stops running: the interval stays that of two
	// for pacerHold, so that the one left is judged at the interval the
	// two were sampled at, then halves.
	p = newPacer(time.Millisecond)
	at = runPacer(p, 1e9, 400, time.Millisecond, 2)
	settled = p.cur
	at = runPacer(p, at, int(pacerHold/settled)-1, 500*time.Microsecond, 1)
	if p.cur != settled {
		t.Errorf("a thread stopped less than %v ago: interval %v, want it kept at %v", pacerHold, p.cur, settled)
	}
	runPacer(p, at, 2*pacerWindow, 500*time.Microsecond, 1)
	if p.cur > settled*3/4 {
		t.Errorf("a thread stopped more than %v ago: interval %v, want about half %v", pacerHold, p.cur, settled)
	}
}

// TestPacerInterval: the reported interval is the one the busy threads'
// samples were taken at, weighed by the CPU time they stand for (as
// record's check sums it): ticks with nothing to sample do not count.
func TestPacerInterval(t *testing.T) {
	p := newPacer(time.Millisecond)
	// Idle at the asked-for interval for a second, then busy (ticks of 1
	// ms of work, for an interval of 1 to 1.5 ms over the share): the
	// interval rises once most of a window of ticks are busy.
	at := runPacer(p, 1e9, 1000, 10*time.Microsecond, 0)
	at = runPacer(p, at, 300, time.Millisecond, 1)
	q := time.Duration(float64(time.Millisecond) / suspendWorkShare)
	if got := p.interval(); got < q || got > q*3/2 {
		t.Errorf("idle then busy: reported %v, want %v to %v", got, q, q*3/2)
	}
	// A thread's short start at 1 ms (a little CPU time) and its workers'
	// long lives at 5 ms: the workers' interval.
	p = newPacer(time.Millisecond)
	p.capped = true
	for range 50 {
		p.count(200*time.Microsecond, p.cur)
	}
	p.cur = 5 * time.Millisecond
	for range 200 {
		p.count(10*time.Millisecond, p.cur)
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

// TestPacerLateTicks: ticks that come later than aimed (gprof's thread
// waiting for a CPU behind busy programs) stretch the reported interval
// to the spacing they really came at, so that record judges the samples
// against what was sampled, and the notice says so; a sleep that ends a
// little late does not.
func TestPacerLateTicks(t *testing.T) {
	p := newPacer(time.Millisecond)
	at := int64(1e9)
	for range 500 {
		p.tick(at, 100*time.Microsecond, 2, 2*p.cur)
		at += int64(p.cur) + 20_000 // 20 µs late
	}
	if got := p.interval(); got != time.Millisecond {
		t.Errorf("ticks 20µs late: reported %v, want the 1ms asked", got)
	}
	p = newPacer(time.Millisecond)
	at = 1e9
	for i := range 500 {
		spacing := time.Millisecond
		if i%2 == 1 {
			spacing = 3 * time.Millisecond // every other tick 2 ms late
		}
		at += int64(spacing)
		// A busy thread's sample stands for the CPU time since its last.
		p.tick(at, 100*time.Microsecond, 1, spacing)
	}
	if got := p.interval(); got < 1900*time.Microsecond || got > 2100*time.Microsecond {
		t.Errorf("every other tick 2ms late: reported %v, want 2ms", got)
	}
	if p.cur != time.Millisecond {
		t.Errorf("late ticks moved the interval aimed for to %v", p.cur)
	}
}

// TestPacerNotice: the one line says the interval sampled at and why.
func TestPacerNotice(t *testing.T) {
	p := newPacer(time.Millisecond)
	runPacer(p, 1e9, 200, 100*time.Microsecond, 2)
	if got := p.notice(true, "round trips to wineserver"); got != "" {
		t.Errorf("cheap ticks on time: notice %q", got)
	}
	p = newPacer(time.Millisecond)
	at := int64(1e9)
	for range 200 {
		at += int64(4 * time.Millisecond)
		p.tick(at, 10*time.Microsecond, 1, 4*time.Millisecond)
		p.late++
	}
	got := p.notice(false, "system calls")
	for _, want := range []string{"instead of 1ms", "came late", "leave a CPU free"} {
		if !strings.Contains(got, want) {
			t.Errorf("late ticks: notice %q lacks %q", got, want)
		}
	}
	p = newPacer(time.Millisecond)
	runPacer(p, 1e9, 400, time.Millisecond, 2)
	got = p.notice(true, "round trips to wineserver")
	for _, want := range []string{"under Wine each sample costs", "round trips to wineserver", "instead of 1ms", "under 20% of the time"} {
		if !strings.Contains(got, want) {
			t.Errorf("costly ticks: notice %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "late") {
		t.Errorf("costly ticks on time: notice %q says late", got)
	}
}

// TestFailedNotice: failed captures are said once they are a noticeable
// share of all, with why under Wine; a few are not.
func TestFailedNotice(t *testing.T) {
	if got := failedNotice(0, 1000, true); got != "" {
		t.Errorf("none failed: %q", got)
	}
	if got := failedNotice(10, 990, true); got != "" {
		t.Errorf("1%% failed: %q", got)
	}
	got := failedNotice(60, 200, true)
	if !strings.Contains(got, "60 of the 200") || !strings.Contains(got, "wineserver") {
		t.Errorf("30%% failed under Wine: %q", got)
	}
	if got := failedNotice(60, 200, false); strings.Contains(got, "Wine") || got == "" {
		t.Errorf("30%% failed on Windows: %q", got)
	}
}
