package suspend

// How often the suspend backend ticks. A tick costs what its calls cost:
// a few µs a thread on Windows, but under Wine each SuspendThread,
// GetThreadContext, ReadProcessMemory and ResumeThread is a round trip to
// wineserver, 30 µs to a ms each (wineserver waits for a CPU like any
// process), and the threads sampled stay suspended meanwhile. So the
// pacer measures each tick's work as it goes and aims for an interval at
// least 1/suspendWorkShare times the usual work of a tick, or the one
// asked for when that is longer: the backend then keeps up with the rate
// it aims for, and slows its targets by about that share at most. The
// interval aimed for is what the backend reports (attach.Result.Interval)
// and what record judges the samples against.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

const (
	// suspendWorkShare is the share of the time a tick's work may take.
	suspendWorkShare = 0.25
	// The usual work of a tick is the median of the last pacerWindow
	// ticks' (so that a few very slow ticks, a GC, a list, a target's
	// threads starting, which under Wine can hold a tick for 50 ms, do
	// not move it), times the tail: how much the mean exceeds the median,
	// averaged over about pacerTailTicks ticks, each counted up to
	// pacerTailCap times the median. Under Wine a tick's work has a long
	// tail (the mean about twice the median, the 90th percentile five
	// times), which makes ticks late as much as the median does.
	pacerWindow    = 9
	pacerTailTicks = 32
	pacerTailCap   = 10
	pacerTailStart = 1.5
	// pacerHold is how long the work must stay well under the share
	// before the interval comes down: record judges each thread's samples
	// against one interval for the whole recording, which should then be
	// the one each thread was sampled at, not an average of very
	// different ones (the last thread left alone at a short interval).
	pacerHold = 250 * time.Millisecond
)

// pacer sets the interval between ticks.
type pacer struct {
	asked, cur time.Duration
	// work holds the last ticks' work (a ring); n counts the ticks.
	work [pacerWindow]time.Duration
	n    int
	// cpu is the CPU time the samples taken stand for (their CPU
	// deltas), aimed the samples the interval aimed for asked for of it
	// then: their ratio is the interval record should judge the samples
	// against, whose check is the same sum for each thread. (Weighing
	// by the threads' wall time instead made the main thread's start,
	// cheap ticks at a short interval, count as much as its busy
	// workers' whole lives.)
	cpu, aimed float64
	// totals, for the notice and the stats
	total   time.Duration // work
	threads int           // threads captured
	late    int           // ticks after their time
	capped  bool          // the interval was ever raised
	longest time.Duration // the longest interval aimed for
	hist    workHist
	// perHist counts each tick's work per thread captured.
	perHist workHist
	// lowSince is when the work fell well under the share (0: it is not).
	lowSince int64
	// tail is how much the mean work exceeds the median, lately.
	tail float64
}

func newPacer(asked time.Duration) *pacer {
	return &pacer{asked: asked, cur: asked, longest: asked, tail: pacerTailStart}
}

// next returns the time to the next tick: uniform over half to one and a
// half intervals, so that ticks cannot fall in step with a periodic
// program.
func (p *pacer) next() time.Duration {
	return p.cur/2 + rand.N(p.cur)
}

// tick records a tick that started at start (ns), took work, captured
// threads threads and took samples for cpu of their CPU time, and
// adjusts the interval.
func (p *pacer) tick(start int64, work time.Duration, threads int, cpu time.Duration) {
	p.cpu += float64(cpu)
	p.aimed += float64(cpu) / float64(p.cur)
	p.work[p.n%pacerWindow] = work
	p.n++
	p.total += work
	p.threads += threads
	p.hist.add(work)
	if threads > 0 {
		p.perHist.add(work / time.Duration(threads))
	}
	if p.n < pacerWindow {
		return
	}
	// Up as soon as the usual work outgrows the share, down once it has
	// stayed well below it for pacerHold.
	sorted := p.work
	slices.Sort(sorted[:])
	med := sorted[pacerWindow/2]
	if med > 0 {
		r := min(float64(work)/float64(med), pacerTailCap)
		p.tail += (r - p.tail) / pacerTailTicks
	}
	want := p.need(time.Duration(float64(med) * max(p.tail, 1)))
	switch {
	case want > p.cur+p.cur/10:
		p.lowSince = 0
	case want < p.cur*3/4:
		if p.lowSince == 0 {
			p.lowSince = start
		}
		if start-p.lowSince < int64(pacerHold) {
			return
		}
		p.lowSince = 0
	default:
		p.lowSince = 0
		return
	}
	p.cur = want
	if p.cur > p.asked {
		p.capped = true
		p.longest = max(p.longest, p.cur)
	}
}

// need returns the interval that work fits in: the one asked for, or
// work over the share, to 10 µs.
func (p *pacer) need(work time.Duration) time.Duration {
	want := time.Duration(float64(work) / suspendWorkShare)
	want = (want + 9*time.Microsecond) / (10 * time.Microsecond) * (10 * time.Microsecond)
	return max(p.asked, want)
}

// interval returns the interval the busy threads were sampled at: the
// one asked for unless the pacer ever raised it.
func (p *pacer) interval() time.Duration {
	if !p.capped || p.aimed == 0 {
		return p.asked
	}
	return time.Duration(math.Round(p.cpu / p.aimed))
}

// perThread returns the usual work of a tick per thread captured (its
// median, to a quarter octave).
func (p *pacer) perThread() time.Duration {
	return p.perHist.quantile(0.5)
}

// workHist counts tick work in buckets of a quarter octave from 1 µs.
type workHist struct {
	n      int
	bucket [96]int
}

func (h *workHist) add(d time.Duration) {
	i := 0
	if us := d.Seconds() * 1e6; us > 1 {
		i = min(int(4*math.Log2(us))+1, len(h.bucket)-1)
	}
	h.bucket[i]++
	h.n++
}

// quantile returns an upper bound of the q quantile.
func (h *workHist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	want := int(math.Ceil(q * float64(h.n)))
	seen := 0
	for i, c := range h.bucket {
		seen += c
		if seen >= max(want, 1) {
			return time.Duration(math.Exp2(float64(i)/4) * 1e3)
		}
	}
	return time.Duration(math.Exp2(float64(len(h.bucket))/4) * 1e3)
}

// String is the quantiles for the profile's stats.
func (h *workHist) String() string {
	us := func(q float64) int64 { return h.quantile(q).Microseconds() }
	return fmt.Sprintf("p50<%d p90<%d p99<%d", us(0.5), us(0.9), us(0.99))
}
