//go:build linux

package perf

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/event"
)

// TestBlocksNoLockstep samples a program whose loop of three functions
// (5:3:2) has a period near the interval, in 400 runs of 1500 samples, as
// a pacer does (runs of pacerEvery firings at a spacing from blockWalk,
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
			var w blockWalk
			for i := 0; i < n; i++ {
				if !fixed && i%pacerEvery == 0 {
					at += int64(pacerMargin) + rng.Int64N(20000)
					d = w.period(rng, int64(interval))
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
	for _, ratio := range []float64{1, 0.5, 2, 0.73, 1.5, 1.0005, 3, pacerEvery} {
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

// TestBlocksKeepCount: a pacer's firings keep to the time they cover. In
// any 64 intervals (a 64 ms program at 1 kHz) it fires 64 times give or
// take the span of its walk (pacerEvery) and the window's two ends,
// whereas spacings drawn on their own drift: the count of a window then
// varies like a random walk's (by 4.6 firings here), and a 64 ms program
// got 55 samples in one run of ten.
func TestBlocksKeepCount(t *testing.T) {
	const interval = int64(time.Millisecond)
	rng := rand.New(rand.NewPCG(7, 8))
	var w blockWalk
	var fires []int64
	at := int64(0)
	for len(fires) < 200000 {
		d := w.period(rng, interval)
		if d < interval*2/5 || d > interval*8/5 {
			t.Fatalf("spacing %d, want 0.4 to 1.6 intervals", d)
		}
		for range pacerEvery {
			at += d
			fires = append(fires, at)
		}
	}
	const window = 64 * interval
	worst := int64(0)
	for k := 0; k < 5000; k++ {
		from := rng.Int64N(at - window)
		lo, _ := slices.BinarySearch(fires, from)
		hi, _ := slices.BinarySearch(fires, from+window)
		worst = max(worst, abs(int64(hi-lo-64)))
	}
	margin(t, "firings off 64 in a window of 64 intervals (worst)", float64(worst), pacerEvery+2)
	if worst > pacerEvery+2 {
		t.Errorf("a window of 64 intervals got 64±%d firings, want within %d", worst, pacerEvery+2)
	}

	// From its start, too: a walk started at the span's edge fires less
	// than its time asks for until it reaches the middle (61.5 for 64, on
	// average; from a random phase 63.5, the window's end taking half a
	// firing).
	var sum float64
	const starts = 4000
	for range starts {
		w := newBlockWalk(rng, interval)
		n, at := 0, int64(0)
		for at < window {
			d := w.period(rng, interval)
			for range pacerEvery {
				if at += d; at <= window {
					n++
				}
			}
		}
		sum += float64(n)
	}
	mean := sum / starts
	margin(t, "mean firings in the first 64 intervals, off 63.5", math.Abs(mean-63.5), 0.5)
	if math.Abs(mean-63.5) > 0.5 {
		t.Errorf("fresh walks fired %.2f times on average in their first 64 intervals, want 63.5 (64, less half a firing at the end)", mean)
	}
}

func margin(t *testing.T, what string, got, bound float64) {
	t.Helper()
	t.Logf("margin: %s %.4g, bound %.4g", what, got, bound)
}

// TestKeepFirstPart: on a launched command's CPU, until its pacer has set
// a whole period after the first firing, the event fires at the first
// part's spacing; the reader keeps one sample an interval of those, then
// every sample.
func TestKeepFirstPart(t *testing.T) {
	const i = int64(time.Millisecond)
	var c paced
	c.r = -1
	c.firstEnd.Store(-1)
	// A pacer held up: the event fires every 0.2 intervals.
	var kept []int64
	for t := int64(0); t < 3*i; t += i / 5 {
		if c.keep(5*i+t, i) {
			kept = append(kept, t)
		}
	}
	if want := []int64{0, i, 2 * i}; !slices.Equal(kept, want) {
		t.Errorf("kept %v of the first part's repeats, want %v", kept, want)
	}
	// The pacer set a whole period at 8.1 intervals: what comes after
	// it, however close, is kept.
	c.firstEnd.Store(8*i + i/10)
	if c.keep(7*i+9*i/10, i) {
		t.Errorf("a repeat before the pacer's setting was kept")
	}
	for _, at := range []int64{8*i + i/5, 8*i + i/2, 8*i + 6*i/10} {
		if !c.keep(at, i) {
			t.Errorf("the sample at %d after the pacer's setting was dropped", at)
		}
	}
	// A CPU whose pacer opened no alarm keeps every sample.
	var none paced
	none.r = -1
	for _, at := range []int64{1, 2, 3} {
		if !none.keep(at, i) {
			t.Errorf("a CPU without an alarm dropped a sample")
		}
	}
}

// TestKeepOtherEvents: while a CPU's clock repeats its first part's
// spacing, the reader thins the clock's samples only: a probe's hits and
// switch-outs in the same ring are each one of a kind, and all kept.
func TestKeepOtherEvents(t *testing.T) {
	const i = int64(time.Millisecond)
	p := &pacing{cpus: make([]paced, 2)}
	for c := range p.cpus {
		p.cpus[c].r = -1
		p.cpus[c].firstEnd.Store(-1)
	}
	var clock, probe, switches int
	for at := 5 * i; at < 7*i; at += i / 10 {
		if p.keep(&event.Sample{Time: at, CPU: 1}, i) {
			clock++
		}
		if p.keep(&event.Sample{Time: at, CPU: 1, Event: 1}, i) {
			probe++
		}
		if p.keep(&event.Sample{Time: at, CPU: 1, Switch: true}, i) {
			switches++
		}
	}
	if clock != 2 || probe != 20 || switches != 20 {
		t.Errorf("kept %d clock samples (want 2), %d probe hits and %d switch-outs (want 20 each)", clock, probe, switches)
	}
	if p.thinned != 18 {
		t.Errorf("thinned %d, want the clock's 18", p.thinned)
	}
}

// TestDropHelper: a launched command's helper records everything before
// its exec, in the batches before the exec's too (a helper released
// before its Go runtime had started was sampled for milliseconds after
// its release), and later ones from before the exec; where records were
// lost, perhaps the exec's, those from before the release.
func TestDropHelper(t *testing.T) {
	sample := func(t int64) event.Event { return &event.Sample{Time: t, Pid: 7, Tid: 7} }
	times := func(evs []event.Event) []int64 {
		var ts []int64
		for _, e := range evs {
			ts = append(ts, event.EventTime(e))
		}
		return ts
	}
	s := &perfSession{launched: map[int]int64{7: -math.MaxInt64}}
	other := &event.Sample{Time: 60, Pid: 8, Tid: 8}
	if got := times(s.dropHelper([]event.Event{sample(50), other})); !slices.Equal(got, []int64{60}) {
		t.Errorf("before the release: kept %v, want only another process's [60]", got)
	}
	s.releasing()
	rel := s.releasedAt
	if got := times(s.dropHelper([]event.Event{sample(rel + 10)})); got != nil {
		t.Errorf("after the release, before the exec: kept %v, want none", got)
	}
	exec := &event.Comm{Time: rel + 30, Pid: 7, Tid: 7, Name: "brief", Exec: true}
	if got := times(s.dropHelper([]event.Event{sample(rel + 20), exec, sample(rel + 40)})); !slices.Equal(got, []int64{rel + 30, rel + 40}) {
		t.Errorf("the exec's batch: kept %v, want the exec and what follows", got)
	}
	if got := times(s.dropHelper([]event.Event{sample(rel + 25), sample(rel + 50)})); !slices.Equal(got, []int64{rel + 50}) {
		t.Errorf("a later batch: kept %v, want what follows the exec", got)
	}

	s = &perfSession{launched: map[int]int64{7: -math.MaxInt64}}
	s.releasing()
	rel = s.releasedAt
	lost := &event.Lost{Time: rel + 5, Count: 3}
	if got := times(s.dropHelper([]event.Event{sample(rel - 10), lost, sample(rel + 10)})); !slices.Equal(got, []int64{rel + 5, rel + 10}) {
		t.Errorf("records lost, no exec seen: kept %v, want those from the release on", got)
	}
}

// Each CPU gprof may run on hosts the pacer of another one (pacerHosts),
// one pacer a CPU, where gprof may run on two or more.
func TestPacerHosts(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Skip(err)
	}
	var cpus []int
	for c := range 1024 {
		if allowed.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	// A CPU gprof may not run on gets no pacer.
	hosts := pacerHosts(append(slices.Clone(cpus), 4095))
	if _, ok := hosts[4095]; ok || len(hosts) != len(cpus) {
		t.Fatalf("hosts %v for the allowed CPUs %v and 4095", hosts, cpus)
	}
	seen := map[int]bool{}
	for cpu, host := range hosts {
		if !allowed.IsSet(host) || seen[host] || (host == cpu) != (len(cpus) == 1) {
			t.Fatalf("hosts %v for the allowed CPUs %v", hosts, cpus)
		}
		seen[host] = true
	}
}

// Turning sampling off waits for a pacer in the middle of its setting,
// and turning it on again moves the pacer's due point and its last
// setting by the time sampling was off.
func TestPauseResume(t *testing.T) {
	p := &pacing{cpus: make([]paced, 1)}
	c := &p.cpus[0]
	c.publish(1_000, 700)
	c.due.Store(1_000 + pacerEvery*700)
	c.seen.Store(1_500)
	c.setting.Store(true)
	done := make(chan struct{})
	go func() {
		p.pause()
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("pause returned while the pacer was setting")
	case <-time.After(20 * time.Millisecond):
	}
	if !c.off.Load() {
		t.Fatal("pause did not turn the pacer off first")
	}
	c.setting.Store(false)
	<-done
	p.disabled(0, 2_000)
	p.resume(0, 9_000)
	n := c.n.Load()
	last := (n - 1) % pacerHistory
	if c.off.Load() || c.due.Load() != 3_800+7_000 || c.seen.Load() != 8_500 || c.set[last].Load() != 8_000 || c.period[last].Load() != 700 {
		t.Errorf("after resume: off %v, due %d, seen %d, last setting %d every %d", c.off.Load(), c.due.Load(), c.seen.Load(), c.set[last].Load(), c.period[last].Load())
	}
}

// TestCaughtUp: a pacer that comes late gives the time back over the
// block (its four firings end where they would have), with no firings
// closer than half the spacing drawn, and keeps the gap across its delay
// under two intervals.
func TestCaughtUp(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, c := range []struct{ next, late, want int64 }{
		{ms, 40 * 1000, ms - 10*1000},          // on time, as a rule: a quarter off each
		{1200 * 1000, 400 * 1000, 1100 * 1000}, // late, the block's end kept
		{1600 * 1000, 800 * 1000, 1150 * 1000}, // late, the gap across it capped at 1.95
		{400 * 1000, 1599 * 1000, 200 * 1000},  // no burst: half the spacing drawn at least
		{minPeriod, minPeriod * 3, minPeriod},  // never under the kernel's floor
	} {
		got := caughtUp(c.next, c.late, ms)
		if got != c.want {
			t.Errorf("caughtUp(%d, %d) = %d, want %d", c.next, c.late, got, c.want)
		}
		if c.late+got > 2*ms {
			t.Errorf("caughtUp(%d, %d) = %d: a gap of %d across the delay", c.next, c.late, got, c.late+got)
		}
	}
}
