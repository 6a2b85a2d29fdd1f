package suspend

// How often the suspend backend ticks. A tick costs what its calls cost:
// a few µs a thread on Windows, but under Wine each SuspendThread,
// GetThreadContext, ReadProcessMemory and ResumeThread is a round trip to
// wineserver, 30 µs to a ms each (wineserver waits for a CPU like any
// process), and the threads sampled stay suspended meanwhile. So the
// pacer measures each tick's work per thread captured as it goes and aims
// for an interval of at least 1/suspendWorkShare times the usual work of
// a tick that captures the threads captured lately, or the one asked for
// when that is longer: the backend then keeps up with the rate it aims
// for, and slows its targets by about that share at most. The interval
// aimed for is what the backend reports (attach.Result.Interval) and
// what record judges the samples against.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

const (
	// suspendWorkShare is the share of the time a tick's work may take.
	suspendWorkShare = 0.2
	// A tick's work is mostly so much per thread captured. The usual work
	// per thread is the median of the last pacerWindow ticks', or of
	// those of the last pacerWindowFor when fewer (but pacerWindowMin at
	// least): so that a few very slow ticks, a GC, a list, the target
	// starting (under Wine a process whose loader runs, or a thread that
	// starts, stops only when done, which can hold a tick for 40 ms) do
	// not move it, and it comes back soon after a run of them, whatever
	// the interval then. It is counted times the tail: how much the mean
	// exceeds the median, averaged over about pacerTailTicks ticks or
	// pacerTailFor, whichever is shorter, each tick counted up to
	// pacerTailCap times the median. Under Wine a tick's work has a long
	// tail (the mean about 1.5 times the median, the 90th percentile
	// three to five times), which makes ticks late as much as the median
	// does.
	pacerWindow    = 9
	pacerWindowFor = 100 * time.Millisecond
	pacerWindowMin = 3
	pacerTailTicks = 16
	pacerTailFor   = 250 * time.Millisecond
	pacerTailCap   = 5
	pacerTailStart = 1.5
	// pacerHold is how long the interval counts threads that are no
	// longer captured: record judges each thread's samples against one
	// interval for the whole recording, which should then be the one each
	// thread was sampled at, not one halved for the last thread left
	// running.
	pacerHold = 250 * time.Millisecond
)

// pacer sets the interval between ticks.
type pacer struct {
	asked, cur time.Duration
	// per holds the last ticks' work per thread captured and when they
	// started (a ring), of ticks that captured any; nPer counts those, n
	// all ticks.
	per     [pacerWindow]time.Duration
	perAt   [pacerWindow]int64
	nPer, n int
	// peak is the most threads a tick captured lately, fewer since
	// fewer (0: not fewer) for pacerHold.
	peak  int
	fewer int64
	// tail is how much the mean work exceeds the median, lately.
	tail float64
	// cpu is the CPU time the samples taken stand for (their CPU
	// deltas), aimed the samples the interval aimed for asked for of it
	// then: their ratio is the interval record should judge the samples
	// against, whose check is the same sum for each thread. (Weighing
	// by the threads' wall time instead made the main thread's start,
	// cheap ticks at a short interval, count as much as its busy
	// workers' whole lives.)
	cpu, aimed float64
	// last is when the last tick started (ns; 0 before the first): the
	// spacing a tick's samples stand for is the time since, which is
	// longer than the interval aimed for when ticks come late (gprof's
	// thread waiting for a CPU, under Wine wineserver too).
	last int64
	// totals, for the notice and the stats
	total   time.Duration // work
	threads int           // threads captured
	late    int           // ticks after their time
	capped  bool          // the interval was ever raised
	longest time.Duration // the longest interval aimed for
	hist    workHist
	// perHist counts each tick's work per thread captured.
	perHist workHist
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
// adjusts the interval: up as soon as the usual work outgrows the share,
// down when it has fallen well below it.
func (p *pacer) tick(start int64, work time.Duration, threads int, cpu time.Duration) {
	spacing := p.cur
	if p.last != 0 && start > p.last {
		spacing = time.Duration(start - p.last)
	}
	p.last = start
	p.count(cpu, spacing)
	p.n++
	p.total += work
	p.threads += threads
	p.hist.add(work)
	switch {
	case threads >= p.peak:
		p.peak, p.fewer = threads, 0
	case p.fewer == 0:
		p.fewer = start
	case start-p.fewer >= int64(pacerHold):
		p.peak, p.fewer = threads, start
	}
	if threads == 0 {
		return
	}
	per := work / time.Duration(threads)
	p.perHist.add(per)
	since := start - p.perAt[(p.nPer+pacerWindow-1)%pacerWindow]
	p.per[p.nPer%pacerWindow], p.perAt[p.nPer%pacerWindow] = per, start
	p.nPer++
	if p.nPer < pacerWindow {
		return
	}
	var window [pacerWindow]time.Duration
	recent := window[:0]
	for i := range pacerWindow {
		j := (p.nPer - 1 - i) % pacerWindow
		if i >= pacerWindowMin && start-p.perAt[j] > int64(pacerWindowFor) {
			break
		}
		recent = append(recent, p.per[j])
	}
	slices.Sort(recent)
	med := recent[len(recent)/2]
	if med > 0 {
		r := min(float64(per)/float64(med), pacerTailCap)
		p.tail += (r - p.tail) * max(1.0/pacerTailTicks, min(float64(since)/float64(pacerTailFor), 1))
	}
	want := p.need(time.Duration(float64(med) * max(p.tail, 1) * float64(p.peak)))
	if want <= p.cur+p.cur/10 && want >= p.cur*3/4 {
		return
	}
	p.cur = want
	if p.cur > p.asked {
		p.capped = true
		p.longest = max(p.longest, p.cur)
	}
}

// count counts the CPU time a tick's samples stand for, at the spacing
// the tick came at.
func (p *pacer) count(cpu, spacing time.Duration) {
	p.cpu += float64(cpu)
	p.aimed += float64(cpu) / float64(spacing)
}

// need returns the interval that work fits in: the one asked for, or
// work over the share, to 10 µs.
func (p *pacer) need(work time.Duration) time.Duration {
	want := time.Duration(float64(work) / suspendWorkShare)
	want = (want + 9*time.Microsecond) / (10 * time.Microsecond) * (10 * time.Microsecond)
	return max(p.asked, want)
}

// interval returns the interval the busy threads were sampled at: the
// one asked for unless the pacer ever raised it or the ticks came late
// enough to stretch it by more than a twentieth (ticks jitter, and a
// sleep ends a little late: that much is not worth a notice).
func (p *pacer) interval() time.Duration {
	if p.aimed == 0 {
		return p.asked
	}
	got := max(time.Duration(math.Round(p.cpu/p.aimed)), p.asked)
	if !p.capped && got <= p.asked+p.asked/20 {
		return p.asked
	}
	return got
}

// notice is the line that says the samples came at a longer interval
// than asked, and why, or "" when they did not: the pacer raised it
// (each sample's cost, for why: round trips to wineserver, system
// calls), or ticks came late (gprof's thread waited for a CPU).
func (p *pacer) notice(wine bool, why string) string {
	got := p.interval()
	if got <= p.asked+p.asked/20 {
		return ""
	}
	under := ""
	if wine {
		under = "under Wine "
	}
	late := ""
	if p.late*10 >= p.n {
		late = fmt.Sprintf("%d of its %d ticks came late, its thread waiting for a CPU", p.late, p.n)
	}
	every := fmt.Sprintf("the suspend backend sampled every %v instead of %v", got.Round(100*time.Microsecond), p.asked)
	if !p.capped {
		return fmt.Sprintf("%s%s: %s (leave a CPU free, or lower the rate)", under, every, late)
	}
	line := fmt.Sprintf("%seach sample costs %dµs (%s): %s, to keep its sampling under %.0f%% of the time",
		under, p.perThread().Microseconds(), why, every, 100*suspendWorkShare)
	if late != "" {
		line += "; " + late
	}
	return line
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

// failedNotice is the line that says how many captures failed (a thread
// suspended whose registers could not be read, or one that could not be
// suspended), or "" when few did: each such capture is a sample missing
// where the thread ran, its CPU time left to its next sample.
// suspendFailedShare of them is worth a notice.
func failedNotice(failed, captured int, wine bool) string {
	// captured counts the threads suspended, failed the captures that
	// failed, most of them after the suspend.
	tries := max(captured, failed)
	if failed == 0 || float64(failed) < suspendFailedShare*float64(tries) {
		return ""
	}
	why := "SuspendThread or GetThreadContext failed"
	if wine {
		why += "; under Wine a suspended thread hands wineserver its registers from a signal handler, which waits for a CPU"
	}
	return fmt.Sprintf("the suspend backend could not read %d of the %d threads it suspended (%s); their CPU time went to their next samples", failed, tries, why)
}

// suspendFailedShare is the share of failed captures worth a notice.
const suspendFailedShare = 0.05
