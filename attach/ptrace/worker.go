//go:build linux

package ptrace

// The stoppers: one goroutine per CPU, its thread pinned to that CPU, that
// samples the target threads found running there.
//
// Why per CPU: a stop (PTRACE_INTERRUPT, like any signal) sent to a thread
// running on another CPU takes effect when that CPU next enters the
// kernel. Where the kernel can interrupt another CPU at once (an
// inter-processor interrupt), that is microseconds; on some virtual
// machines the interrupt is not delivered and the thread stops only at
// that CPU's next timer tick, up to 4 ms later (HZ=250), or earlier at a
// page fault or system call of its own. A sampler that stops threads on
// other CPUs is then slow (a tick per sample) and wrong (the stops that do
// come promptly are the ones that meet a fault, so samples pile up on the
// code that faults). A stopper on the thread's own CPU does not depend on
// any of that: its timer fires on that CPU, it preempts the target there
// (it runs SCHED_FIFO when it may), and the target, no longer running,
// stops as soon as it is given the CPU back, with its registers exactly
// where the timer interrupted it.
//
// A stopper never waits on another goroutine or a lock: a wake-up from
// another CPU is exactly what may take a tick. Its samples go to the
// coordinator through a lock-free ring (ring.go), and the threads it looks
// after come to it through a lock-free inbox (table.go).

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/phasewalk"
	"github.com/gprof-dev/gprof/attach/internal/yield"
	"github.com/gprof-dev/gprof/event"
)

// worker is one stopper. cpu is the CPU its thread is pinned to, or -1
// where pinning failed (a CPU outside gprof's cpuset): such a worker's
// threads are stopped from wherever it runs.
type worker struct {
	idx, cpu int
	s        *ptSampler
	ring     *ring
	stop     *atomic.Bool

	pending []pendingStop
	due     []dueThread
	// mine holds the threads this worker owns and looks at every tick;
	// cold those it owns that have not run for coldAfter looks, looked at
	// only when their process's CPU time shows that one of its threads
	// ran unseen (see sweep); inbox those handed to it since its last
	// tick.
	mine   []*shared
	cold   []*shared
	inbox  inbox
	swept  uint64 // the sampler's sweep generation last acted on
	cursor int    // where the next background look at cold threads starts
	// coldCredit counts the cold threads due a look in turn.
	coldCredit float64
	woke       int64     // when the current tick began (event.Now)
	wokeAt     time.Time // the same, for durations
	// timerAt is when the current tick's timer was set to fire: a thread
	// running here then was preempted then, not when the worker woke
	// (on a virtual machine the wake-up took 20-70 µs after the timer).
	timerAt time.Time
	regs    event.Regs
	iov     []unix.RemoteIovec
	buf     []byte
	tids    []int // a process's threads, as adoptNew lists them
	stats   ptStats
	// owed says a thread sampled at this tick is still due another
	// sample: the next tick comes sooner (see loop). soonest is when the
	// first thread found running here falls due if it goes on running as
	// it did (zero: none), for the next tick to come then (see predict).
	owed    bool
	soonest time.Time
	// priority says how the worker got ahead of its targets (yield.Ahead).
	priority string
	// timer ends its waits for a stop (collect); nil where it could not
	// be made.
	timer *waitTimer
	// tracing counts threads seized and not detached: if it is not zero
	// when the worker ends, its thread must end too (the kernel then
	// detaches them), so the goroutine stays locked.
	tracing int
	// leftTraced lists the threads it still traced as it ended.
	leftTraced []int
	// tid is the worker's thread while it ticks (0 before and after),
	// for another worker to wake it (wake); woken says it was.
	tid   atomic.Int32
	woken atomic.Bool
}

// pendingStop is a thread interrupted and not yet collected.
type pendingStop struct {
	th     *shared
	kind   entryKind
	before ptSched // schedstat read after the worker woke, before the interrupt
	mid    ptSched // and right after it
	cpu    int     // where the thread was at the tick
	t0     time.Time
	wchan  string
	// tick is when the timer of the tick that interrupted it fired (or
	// the worker woke, if sooner), woke that wake-up as event.Now: a stop
	// may come ticks later, for a thread behind another for its CPU,
	// and still show where the thread was at this one.
	tick time.Time
	woke int64
}

func newWorker(s *ptSampler, idx, cpu int, stop *atomic.Bool) *worker {
	return &worker{
		idx: idx, cpu: cpu, s: s, stop: stop,
		ring: newRing(ringSize, s.stackSize),
		buf:  make([]byte, 1024),
	}
}

// run is the worker's goroutine. It returns once the recording stops and
// its interrupted threads are let go.
func (w *worker) run() {
	runtime.LockOSThread()
	w.ring.warm(warmBytes)
	restore, pinned := w.pin()
	if !pinned {
		w.cpu = -1
		w.stats.unpinned++
	}
	if w.s.timedWaits {
		w.timer, _ = newWaitTimer()
		w.tid.Store(int32(unix.Gettid()))
	}
	w.s.workersReady.Done()
	w.loop()
	w.tid.Store(0)
	if w.timer != nil {
		w.timer.close()
	}
	if w.tracing > 0 {
		// Leave the thread locked: it ends with the goroutine, and the
		// kernel detaches (and lets run) whatever it still traces, a
		// moment later (stopWorkers waits for that).
		for _, p := range w.pending {
			w.leftTraced = append(w.leftTraced, p.th.tid)
		}
		return
	}
	restore()
	runtime.UnlockOSThread()
}

// pin moves the worker's thread ahead of the threads it samples
// (yield.Ahead) and then to its CPU, with a 1 ns timer slack so that its
// ticks do not drift toward other timers. It returns what undoes all
// that. Ahead first: moved to a busy CPU first, the thread waited there
// behind whatever ran before it could raise its priority, and a new
// thread of a command launched beside CPU-bound loops ran 3 to 7 ms on
// that CPU before its stopper ticked.
func (w *worker) pin() (restore func(), pinned bool) {
	var old unix.CPUSet
	haveOld := unix.SchedGetaffinity(0, &old) == nil
	unprioritize, priority := yield.Ahead(1) // it must preempt its targets
	w.priority = priority
	if w.cpu >= 0 {
		var set unix.CPUSet
		set.Set(w.cpu)
		pinned = unix.SchedSetaffinity(0, &set) == nil
	}
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	return func() {
		unprioritize()
		unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0)
		if haveOld {
			unix.SchedSetaffinity(0, &old)
		}
	}, pinned
}

// loop ticks until the recording stops, then collects what is still
// pending.
func (w *worker) loop() {
	interval := w.s.interval
	next := time.Now().Add(rand.N(interval))
	for !w.stop.Load() {
		w.timerAt = next
		if !w.sleepUntil(next) {
			break
		}
		if w.s.paused.Load() {
			// Sampling is off (control.go): stop no thread.
			next = time.Now().Add(pausedPoll)
			continue
		}
		next = next.Add(jitter(interval))
		cpu0 := threadCPU()
		w.tick(next)
		now := time.Now()
		if now.Sub(next) > interval/2 {
			// Sampling took longer than the interval: skip the ticks
			// that were missed instead of running them back to back.
			w.stats.behind++
			next = now
		}
		if !w.soonest.IsZero() {
			// A thread running here falls due: tick a little after
			// that (a random sixteenth of an interval at most), no
			// sooner than a sixteenth from now and no later than the
			// timed tick could have come, in place of it. A timed tick
			// before the due point could only look and foresee it
			// again, and each tick takes the thread's CPU for 40 µs or
			// more on a virtual machine: a 64 ms program alone had 97
			// to 109 ticks rather than 114 to 129 (for 67 samples).
			// A sample lands past its due point by what this adds, and
			// by a whole floor where a look came early: with a quarter
			// interval for both, samples landed 200-450 µs past due
			// points that came soon after a sample and 60 µs past far
			// ones, which favours some instants of a loop that keeps
			// to the interval (see handOverMoved); with a sixteenth,
			// and a moved thread's new worker woken at once, 35-80 µs
			// past all of them.
			at := w.soonest.Add(rand.N(interval / 16))
			if floor := now.Add(interval / 16); at.Before(floor) {
				at = floor
			}
			if latest := now.Add(interval * 3 / 2); at.After(latest) {
				at = latest
			}
			next = at
			w.stats.predicted++
		}
		if w.owed {
			// A thread sampled at this tick is still owed one: ticks it
			// missed (its stopper late for its CPU, the thread on its
			// way to another CPU, a stop that showed no fair sample)
			// are made up at twice the rate, at jittered ticks still,
			// until its credit is paid. One sample per tick at the
			// mean rate could never pay them back.
			if soon := now.Add(jitter(interval) / 2); soon.Before(next) {
				next = soon
				w.stats.catchUp++
			}
		}
		// A tick that took more than half an interval of CPU (a sweep
		// of thousands of idle threads) is followed by as long a rest
		// (dutyRest): a stopper, real-time as root, never keeps its
		// CPU from others, the targets among them, for long.
		if work := threadCPU() - cpu0; work > interval/2 && next.Sub(now) < work*dutyRest {
			w.stats.dutyCapped++
			next = now.Add(work * dutyRest)
		}
	}
	deadline := time.Now().Add(ptDrainLimit)
	for len(w.pending) > 0 && time.Now().Before(deadline) {
		sleep(100 * time.Microsecond)
		w.poll()
	}
}

// sleepUntil sleeps on the worker's own thread until t: a timer of this
// CPU wakes it (Go's timers would wake another thread, which must then
// wake this one from another CPU). It reports false if the recording
// stopped meanwhile.
func (w *worker) sleepUntil(t time.Time) bool {
	for {
		if w.stop.Load() {
			return false
		}
		d := time.Until(t)
		if d <= 0 {
			return true
		}
		if w.woken.Swap(false) {
			w.stats.woken++
			return true
		}
		sleep(min(d, 10*time.Millisecond)) // to notice the stop
	}
}

// wake has the worker tick now, if it is asleep, and else as soon as it
// is done with its tick: another worker calls it when it hands a thread
// over (handOverMoved). The signal ends the worker's sleep where
// waitSignal ends system calls (timedWaits); elsewhere the worker sees
// the flag when its current step of sleep ends (10 ms at most, see
// sleepUntil), or at its next tick if that comes first.
func (w *worker) wake() {
	if w.woken.Swap(true) {
		return // already asked
	}
	if tid := w.tid.Load(); tid != 0 {
		// Raw, as the stoppers' other system calls (see sys.go).
		unix.RawSyscall(unix.SYS_TGKILL, uintptr(unix.Getpid()), uintptr(tid), uintptr(waitSignal))
	}
}

// threadCPU is the CPU time of the calling thread (a stopper's own,
// locked to it): what a tick cost, its sleeps waiting for stops apart.
func threadCPU() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

// sleep sleeps for d at most, raw (see sys.go): the runtime's request to
// yield, a signal, may end it early.
func sleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// jitter returns a tick length drawn uniformly from 0.5 to 1.5 times d. A
// fixed tick can lock in phase with a target's own loop and sample some
// of its functions more than their share (seen as 55/26/19 for a 50/30/20
// split); random ticks with the same mean cannot.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d)
}

// tick looks at the threads this worker owns and samples the ones that
// are running on its CPU and due for a sample.
func (w *worker) tick(next time.Time) {
	w.wokeAt = time.Now()
	w.woke = event.Now()
	w.stats.ticks++
	w.owed = false
	w.soonest = time.Time{}
	w.mine = w.inbox.take(w.mine)
	w.due = w.due[:0]
	kept := w.mine[:0]
	for _, th := range w.mine {
		if th.gone.Load() {
			th.closeFiles()
			continue
		}
		if !w.look(th) {
			continue
		}
		if th.cold(w.woke) && !th.interrupted && !w.runnable(th) {
			th.closeFDs()
			th.isCold.Store(true)
			w.cold = append(w.cold, th)
			continue
		}
		kept = append(kept, th)
	}
	clear(w.mine[len(kept):])
	w.mine = kept
	w.sweep()
	for _, d := range w.due {
		w.interrupt(d.th, onCPU, d.sched, d.cpu)
	}
	// The stops are waited for until the next tick, or until a thread
	// found runnable here falls due, if sooner: a stop of a thread that
	// waits for its CPU comes only when it gets it, and beside CPU-bound
	// loops that took 1.2 ms while another thread here, waiting at the
	// look, got its CPU back and ran past its due point (a gap of 3.3
	// intervals). A stop that has not come is taken at a later tick.
	until := next
	if !w.soonest.IsZero() && w.soonest.Before(until) {
		until = w.soonest
	}
	w.collect(until)
	w.handOverMoved()
}

// Idle threads. A process may have thousands of threads that wait, and
// looking at one costs a read of its schedstat (1 to 6 µs): at every tick,
// 10,000 of them took longer than the tick. So a thread that has not run
// for coldAfter (or, one never seen running, at two looks in a row: the
// threads found when attaching) goes cold: its files are closed and it is
// looked at only when its process's CPU time (one clock read for all its
// threads, by the coordinator) grew more than its looked-at threads'
// did, that is, when one of its cold threads ran (see
// ptSampler.checkCold); and coldPerSecond of them anyway, in turn, in
// case a change went unnoticed. A cold thread found to have run
// is looked at as usual and is hot again. The cost of a tick then grows
// with the threads that run, not with those that wait.
//
// coldAfter is long enough that a busy thread waiting for its CPU on a
// loaded machine (tens of ms) stays hot.
const (
	coldAfter     = 500 * time.Millisecond
	coldPerSecond = 200
	// dutyRest: after a tick, a stopper sleeps at least dutyRest times
	// the CPU time the tick took, so it never takes more than half its
	// CPU.
	dutyRest = 1
)

// runnable says whether a thread about to go cold is waiting for a CPU
// rather than for something else (a busy thread behind another for the
// looks that found it had not run, or on a machine loaded enough for
// longer than coldAfter): it stays hot.
func (w *worker) runnable(th *shared) bool {
	state, _, ok := th.readStat(w.buf)
	return ok && state == 'R'
}

// sweep looks at cold threads: all of them when the sampler asks (a cold
// thread ran), else coldPerSecond in turn. Those that ran are hot again.
func (w *worker) sweep() {
	w.coldCredit += coldPerSecond * w.s.interval.Seconds()
	n := min(int(w.coldCredit), len(w.cold))
	w.coldCredit -= float64(int(w.coldCredit))
	if g := w.s.sweepGen.Load(); g != w.swept {
		w.swept = g
		n = len(w.cold)
		w.stats.sweeps++
	}
	for ; n > 0 && len(w.cold) > 0; n-- {
		if w.cursor >= len(w.cold) {
			w.cursor = 0
		}
		th := w.cold[w.cursor]
		keep := !th.gone.Load() && w.look(th)
		if keep && th.cold(w.woke) {
			w.cursor++
			continue
		}
		// Gone, handed on, or hot again: out of the cold list.
		th.isCold.Store(false)
		last := len(w.cold) - 1
		w.cold[w.cursor] = w.cold[last]
		w.cold[last] = nil
		w.cold = w.cold[:last]
		switch {
		case th.gone.Load():
			th.closeFiles()
		case keep:
			w.mine = append(w.mine, th)
		}
	}
}

// handOverMoved hands on the threads that went to another CPU as they
// were let go (see take), and wakes their new CPU's worker to take them
// at once, with the time their next sample falls due (shared.dueAt), so
// that it ticks then.
//
// Taken at that worker's own next tick instead, a moved thread was
// looked at first anywhere up to 1.5 intervals later: after its due point
// when that came soon after the sample, before it when it came late. Its
// samples then landed further past their due points the nearer those
// were, and since due points walk over an interval of the thread's own
// CPU time (duePhase) from its start, they landed more often at some
// instants of each interval than at others. A program whose loop keeps to
// that interval of its CPU time got the same instants every run:
// testdata/lockstep.c, alone on two CPUs and moved at 9 of 10 samples,
// got 32.4% of the samples in the function that takes 30.0% and 17.7% in
// the one that takes 20.0%, pooled over 10 runs (TestLockstep).
func (w *worker) handOverMoved() {
	kept := w.mine[:0]
	for _, th := range w.mine {
		if th.moveTo > 0 && !th.interrupted {
			owner := th.moveTo - 1
			th.moveTo = 0
			w.handOver(th, owner)
			w.s.workers[owner].wake()
			continue
		}
		kept = append(kept, th)
	}
	clear(w.mine[len(kept):])
	w.mine = kept
}

// dueThread is a thread found running on the worker's CPU at this tick
// and due for a sample.
type dueThread struct {
	th    *shared
	sched ptSched
	cpu   int
}

// look decides what to do with one thread at this tick: a thread running
// on this CPU (or waiting for it) and due for a sample goes into w.due. It
// reports whether the worker keeps the thread (false: handed on).
func (w *worker) look(th *shared) (keep bool) {
	if th.interrupted {
		return true // still pending from an earlier tick
	}
	if at := th.dueAt; !at.IsZero() {
		// Just handed over as it was let go (handOverMoved): looked at
		// when its next sample falls due. A look before could only
		// foresee that again, from a window of its time too short to
		// tell its share by.
		th.dueAt = time.Time{}
		w.foresee(at)
		if w.wokeAt.Before(at) {
			return true
		}
	}
	sched, ok := th.readSchedstat(w.buf)
	if !ok {
		return true
	}
	w.rebase(th, sched)
	ran := sched.run - th.lastRun
	th.lastRun = sched.run
	share := 0.0
	if th.lookedAt > 0 && w.woke > th.lookedAt {
		share = float64(ran) / float64(w.woke-th.lookedAt)
	}
	th.lookedAt = w.woke
	th.seenRun.Store(sched.run)
	if ran == 0 {
		th.idle++
	} else {
		th.idle = 0
		th.ranAt = w.woke
		th.proc.seen.Add(ran)
		th.ran.Store(true)
		th.named.Store(true)
	}
	// A sample stands for an interval of the thread's CPU time, as
	// perf's CPU clock takes one per interval of a thread's own time,
	// not per interval of the wall clock: its stops, and this worker's
	// own time, take some of the thread's. The time counts here, before
	// anything below hands the thread to another CPU's worker or finds
	// it asleep: a busy thread alone on a machine moves at almost every
	// sample, and the time it ran before it moved is owed samples too
	// (dropped, it cost such a thread 5-8% of its samples).
	th.credit += ran
	if limit := creditCap * int64(w.s.interval); th.credit > limit {
		w.stats.capped += time.Duration(th.credit - limit)
		th.credit = limit
	}
	offCPU := w.s.opts.OffCPU
	queued := th.queued
	th.queued = false
	if ran == 0 && (!offCPU || th.off) && !queued {
		// Not on a CPU since the last look (a thread running on another
		// CPU shows its time at that CPU's ticks: it is looked at again
		// soon enough).
		return true
	}
	l, ok := th.readStatLine(w.buf)
	state, cpu := l.state, l.cpu
	if !ok || state == 'Z' || state == 'X' {
		return true
	}
	if n := th.proc.threads.Load(); n > 0 && int(n) != l.threads {
		// Its process started or ended a thread since the coordinator
		// last looked: a new one is to be sampled from its start.
		w.s.nudge()
		w.adoptNew(th.proc, int32(l.threads))
	}
	if owner := w.s.workerFor(cpu); owner != w.idx {
		// On another CPU now: handed over, and that CPU's worker woken
		// to look at it at once. Left to that worker's own next tick, up
		// to 1.5 intervals on, it ran past its due point: a thread let go
		// onto the idle CPU was often pulled back at once by the CPU it
		// came from, whose stopper was going to sleep, so that the
		// stopper woken for it found it gone and handed it back unwoken.
		// A busy thread alone on two CPUs, recorded for 5 s, had 104-157
		// of its 5,000 samples over 2 intervals of its CPU time after the
		// one before (all 44 in a traced 3 s run began so); now 5 to 7
		// (TestPtraceLongRunGaps). Handed over with a due point foreseen
		// from here instead, as handOverMoved does, it had none, but
		// testdata/lockstep.c's runs came off their shares beyond 4
		// sampling errors in 4 of 17 TestLockstep sets (none in 15 now):
		// a thread running on another CPU shows in its schedstat only the
		// time up to that CPU's last tick, so the point came late by up
		// to a tick.
		w.handOver(th, owner)
		w.s.workers[owner].wake()
		return false
	}
	running := state == 'R'
	if th.off {
		switch {
		case th.woke && running && !th.wokeSeen:
			// Running at the first look since its sleeping stack was
			// taken: the stop woke it, and its let-go restarts its
			// system call, often on the other CPU, whose worker looks
			// at once (handOverMoved). Taken for a wake-up, it was
			// stopped again there, and woke again, in a loop: sleep 1
			// lost up to 28% of its off-CPU samples, its time split
			// into stretches each short of its samples. Once more at
			// the next look, unsampled meanwhile.
			th.wokeSeen = true
			return true
		case th.woke && !running:
			// Back in its sleep: what the stop cost it is behind it.
			th.woke, th.wokeSeen = false, false
		case running || ran > 0 && !th.woke:
			w.push(entry{kind: switchIn, pid: th.pid, tid: th.tid, time: w.woke})
			th.off, th.woke, th.wokeSeen = false, false, false
		}
	}
	if !running {
		if offCPU && !th.off && !th.proc.denied.Load() {
			w.interrupt(th, switchOut, sched, cpu)
		}
		return true
	}
	th.woke = false
	th.queued = true
	// Due where its phase says (duePhase); it may still owe some after
	// its sample, paid at the quicker ticks that follow (see loop).
	if th.credit < th.due {
		w.predict(th.due-th.credit, share, w.wokeAt)
		return true
	}
	if sched.switches == th.switches {
		// Runnable, but waiting for a CPU ever since its last stop.
		w.stats.idle++
		w.predict(0, 0, w.wokeAt)
		return true
	}
	if th.proc.denied.Load() {
		return true
	}
	w.due = append(w.due, dueThread{th, sched, cpu})
	return true
}

// predict notes that a thread found runnable here (running, or waiting
// for this CPU) falls due after cpu ns more of its CPU time, which it has
// been getting at share of the wall time since from: the next tick comes
// then, so that a busy thread is sampled near its due point rather than
// up to a tick's 1.5 intervals after it (a 64 ms program's samples were
// up to 4.1 intervals of its CPU time apart).
//
// Running on at its share, it falls due after cpu/share. But a thread
// that shares its CPU gets it in slices (1.4 ms each beside a CPU-bound
// loop here), not a steady share, and may have it back the moment after
// this look: then it falls due after cpu. So the next look comes then, a
// quarter interval on at the soonest, or when its share says if that is
// sooner. The floor keeps the looks at a thread that waits to four per
// interval (one waiting for its CPU, share 0, is looked at every quarter
// interval until it runs): a full-speed guess alone, like a share too
// high, has the looks come again and again before the thread falls due
// (an earlier try ticked at up to 8 kHz). Predicted from its share alone,
// or left to the timed tick when it waited, a thread that got its CPU
// back just after a look ran up to 1.5 intervals past its due point:
// beside two CPU-bound loops, the longest gap between a 64 ms program's
// samples was 2.3 to 3.5 intervals of its CPU time in every run.
func (w *worker) predict(cpu int64, share float64, from time.Time) {
	d := max(time.Duration(cpu), w.s.interval/4)
	if share > 0 {
		d = min(d, time.Duration(float64(cpu)/min(share, 1)))
	}
	w.foresee(from.Add(d))
}

// foresee notes that a thread running here falls due at at: the next tick
// comes then (see loop), unless another falls due sooner.
func (w *worker) foresee(at time.Time) {
	if w.soonest.IsZero() || at.Before(w.soonest) {
		w.soonest = at
	}
}

// duePhase returns where in the next interval of a thread's CPU time its
// next sample is due, given where in this one the last was (phasewalk).
//
// A sample stands for an interval of the thread's CPU time, so the
// samples of a busy thread come one per interval of its CPU time, at the
// first tick after each is due. Were they due at the same point of every
// interval (half of it, once), the ticks' randomness would only blur a
// fixed period: a program whose loop takes an interval of CPU time was
// sampled near the same instants of each round, its functions off their
// shares by 5 points in a run (10 at worst), a different way each run.
// With the phase a random walk over the interval, every instant of such a
// round is as likely to be sampled, and the count still keeps to the CPU
// time. Reflected, not wrapped around (steps of a random half to whole
// interval, mod the interval, put due points up to two intervals apart):
// due points are 0.4 to 1.6 intervals apart, and a busy thread sampled
// near its due points (predict) has at most about 1.85 intervals of CPU
// time between samples.
func duePhase(phase, interval int64) int64 {
	return phasewalk.Next(nil, phase, interval)
}

// creditCap bounds the CPU time, in intervals, that a thread not caught
// running may bank: past it, its time is owed no more samples; what is
// banked the loop pays at twice the rate. Busy threads beside a CPU-bound
// loop bank more than 4 (where exactly is not pinned down): at 4, 4 runs
// of 8 lost 57-129 ms of their threads' 3 s of CPU past the cap (ratios
// 0.914-0.962, ptrace_missed); at 16, 7 of 8 lost none.
const creditCap = 16

// interrupt seizes th and asks it to stop; collect takes the stop.
func (w *worker) interrupt(th *shared, kind entryKind, before ptSched, cpu int) {
	switch err := ptSeize(th.tid); err {
	case nil:
	case unix.EPERM:
		w.stats.denied++
		w.push(entry{kind: denied, pid: th.pid, tid: th.tid, time: w.woke})
		return
	default:
		return // gone
	}
	w.tracing++
	tick := w.wokeAt
	if w.timerAt.Before(tick) {
		tick = w.timerAt
	}
	p := pendingStop{th: th, kind: kind, before: before, cpu: cpu, t0: time.Now(), tick: tick, woke: w.woke}
	if kind == switchOut {
		p.wchan = readWchan(th.pid, th.tid)
	}
	if cpu != w.cpu {
		// A CPU with no worker of its own: the stop goes to another CPU.
		w.stats.remote++
	}
	if err := ptInterrupt(th.tid); err != nil {
		th.interrupted = true
		w.pending = append(w.pending, p)
		return
	}
	p.mid, _ = th.readSchedstat(w.buf)
	th.interrupted = true
	w.pending = append(w.pending, p)
}

// collect takes the stops of the interrupted threads, until they are all
// in or until, at the latest, the next tick. A thread it preempted stops
// as soon as it has the CPU back (some 15 µs here). It never waits past
// the next tick for a stop: a thread that was not running at the tick
// but waiting for the CPU, behind a busier or higher-priority one, stops
// only when it gets the CPU, which can take hundreds of milliseconds; and
// a thread that moved to another CPU wakes the worker from there, which
// is what may take a tick. Where a timed wait is not to be had (no timer,
// see waitTimer), or for several stops at once, the worker sleeps and
// looks, the first time after ptFirstLook.
func (w *worker) collect(until time.Time) {
	step := ptFirstLook
	timed := false
	for len(w.pending) > 0 {
		d := time.Until(until)
		if d <= 0 || w.stop.Load() {
			return
		}
		if len(w.pending) == 1 && w.timer != nil && d >= ptTimedWaitMin {
			// One stop to wait for, the usual case: wait4 wakes the
			// worker the moment it comes, and the timer at the next
			// tick if it does not. Sleeping and looking instead, the
			// first look at 25 µs came after 70-100 µs on a virtual
			// machine, whose timers are slow, while the thread had
			// stopped after about 15: a thread was kept from running
			// 75-130 µs a sample rather than 20-30. (A timer every
			// 100 µs instead of at the tick put most stops at 32-64 µs
			// rather than 16-32.)
			if !timed {
				timed = true
				w.stats.waited++
			}
			w.pending = w.settle(w.pending[0], ptWaitUntil(w.pending[0].th.tid, w.timer, d), w.pending[:0])
		} else {
			sleep(min(step, d))
			w.poll()
		}
		step = min(2*step, ptLookMax)
	}
}

// ptFirstLook is how long a stopper sleeps before it looks for the stops
// of the threads it interrupted; ptLookMax the longest it sleeps between
// looks while some are missing. ptTimedWaitMin is the shortest wait done
// in wait4 with the timer: a timer that fires before wait4 has begun
// (tens of µs on) is lost, and the wait went on until the stop came, 2.2
// ms for a thread waiting for its CPU, while another here fell due.
const (
	ptFirstLook    = 25 * time.Microsecond
	ptLookMax      = 100 * time.Microsecond
	ptTimedWaitMin = 200 * time.Microsecond
)

// poll takes the stops that have come.
func (w *worker) poll() {
	kept := w.pending[:0]
	for _, p := range w.pending {
		kept = w.settle(p, ptPoll(p.th.tid), kept)
	}
	clear(w.pending[len(kept):])
	w.pending = kept
}

// settle acts on what a wait found of pending stop p, and returns kept
// with p appended if it is still pending.
func (w *worker) settle(p pendingStop, r stopResult, kept []pendingStop) []pendingStop {
	switch r.kind {
	case stopNone:
		return append(kept, p)
	case stopped:
		return w.take(p, r, kept)
	case stopGone:
		w.tracing--
		p.th.interrupted = false
		if r.status.Exited() || r.status.Signaled() {
			w.push(entry{kind: reaped, pid: p.th.pid, tid: p.th.tid, status: r.status})
		}
	default: // no longer ours to wait for
		w.tracing--
		p.th.interrupted = false
	}
	return kept
}

// take reads a stopped thread's registers and stack when its stop shows
// where it was at the tick, lets it go, and hands the sample on.
func (w *worker) take(p pendingStop, r stopResult, kept []pendingStop) []pendingStop {
	th := p.th
	latency := time.Since(p.t0)
	w.stats.latency.add(latency)
	if latency > ptStopLimit {
		w.stats.late++
	}
	kentry, err := ptGetRegs(th.tid, &w.regs)
	now, ok := th.readSchedstat(w.buf)
	// Whether the thread is where it was at the tick. It was running then
	// if it was taken off the CPU when this worker's timer fired: all it
	// waited for the CPU since (run_delay) fits in the time since then,
	// however many ticks ago. (Counted from the worker's wake-up at the
	// tick that took the stop, it did not once stops came to be taken as
	// soon as they came, see collect: a wake-up takes tens of µs on a
	// virtual machine, and a thread behind a CPU-bound loop stops ticks
	// later.) A thread
	// that had been waiting since before the tick stops where it was
	// taken off earlier (at a tick, or at the system call that ended its
	// time slice), and such stops bunch on the code around system calls.
	// And it must not have run since (switches unchanged between the look
	// before the interrupt and the one after): once interrupted, it stops
	// before it runs user code again.
	atTick := true
	if p.kind == onCPU && ok {
		waited := time.Duration(now.delay - p.before.delay)
		atTick = p.mid.switches == p.before.switches &&
			waited <= time.Since(p.tick)+ptWakeSlack
	}
	// A thread that was waiting for the CPU at the tick stops where it was
	// taken off it. That is a fair sample too when an interrupt took it
	// off (a timer tick, this worker's own wake-up, at no particular
	// instruction), but not a system call's end or a fault, where a
	// thread whose time is up is taken off the CPU more than its share:
	// those stops would bunch on the code around system calls and on
	// the instructions that fault.
	fair := atTick || kentry == entryInterrupt
	var stack []byte
	e := entry{kind: p.kind, pid: th.pid, tid: th.tid, time: p.woke, cpu: p.cpu, run: p.before.run, gen: th.gen, since: th.resumeRun}
	slot := w.ring.slot()
	if err == nil && fair && slot != nil {
		var end uint64
		if all := th.proc.all.Load(); all != nil {
			end, _ = findRange(*all, w.regs.SP)
		}
		stack, w.iov = readStack(th.pid, w.regs.SP, end, slot.stack[:cap(slot.stack)], w.iov)
		if read := w.s.opts.Interp; read != nil && p.kind == onCPU {
			// The interpreter's frames, read while the thread is still
			// stopped where its registers and stack were taken.
			e.interp = read(th.pid, th.tid, attach.ProcessMemory(th.pid))
		}
	}
	if ptDetach(th.tid, r.sig) == unix.ESRCH {
		// Killed while stopped: its exit is still this worker's to
		// collect, so it stays pending.
		kept = append(kept, pendingStop{th: th, kind: reapOnly})
	} else {
		w.tracing--
		th.interrupted = false
		// Letting it go wakes it, and the scheduler places a thread it
		// wakes on an idle CPU rather than on this one, busy with this
		// worker: a thread alone on a machine moves at each sample. Its
		// new CPU's worker takes it from its next tick (waiting for this
		// worker's next look would cost a tick each time).
		if _, cpu, ok := th.readStat(w.buf); ok {
			if owner := w.s.workerFor(cpu); owner != w.idx {
				th.moveTo = owner + 1
				w.stats.moved++
			}
		}
	}
	held := time.Since(p.t0)
	w.stats.paused += held
	w.stats.maxPause = max(w.stats.maxPause, held)
	if ok {
		th.switches = now.switches
	}
	if err != nil {
		return kept
	}
	if r.sig != 0 {
		w.stats.signals++
	}
	switch p.kind {
	case onCPU:
		if !fair {
			// Stopped where a system call or fault took it off a CPU; its
			// CPU time waits for its next sample, at a look a random
			// time up to half an interval on: a sample due at once would
			// land just after that system call, at the same point of a
			// program's loop each time it makes one. (Left to the next
			// timed tick, up to 1.5 intervals on, a thread that makes a
			// system call every few µs, behind CPU-bound loops, went up
			// to 2.9 intervals of its CPU time unsampled.)
			w.stats.offCPU++
			at := time.Now().Add(rand.N(w.s.interval / 2))
			if th.moveTo > 0 {
				th.dueAt = at // for its new CPU's worker (handOverMoved)
			} else {
				w.foresee(at)
			}
			return kept
		}
		if !atTick {
			w.stats.waiting++
		}
		// In a system call or fault at the tick (it stops on the way
		// out): time in the kernel, shown as perf shows a kernel-mode
		// sample without kernel stacks, on the user stack that entered
		// the kernel.
		e.inKernel = atTick && (kentry == entrySyscall || kentry == entryException)
		w.stats.entries[kentry]++
		th.credit -= int64(w.s.interval)
		th.due = duePhase(th.due, int64(w.s.interval))
		// When it falls due, let go now and running on as it did.
		at := time.Now()
		if th.credit < th.due {
			at = at.Add(time.Duration(th.due - th.credit))
		}
		switch {
		case th.moveTo > 0:
			th.dueAt = at // for its new CPU's worker (handOverMoved)
		case th.credit >= th.due:
			w.owed = true
		default:
			w.foresee(at)
		}
	case switchOut:
		// Asleep, it stops in its system call: that is the stack wanted.
		// The stop costs it a little CPU time, which must not count as
		// a reason to think it woke.
		th.off, th.woke, th.wokeSeen = true, true, false
		e.wchan = p.wchan
		e.asleepAt = p.woke
	case reapOnly:
		return kept
	}
	if slot == nil {
		w.stats.dropped++
		return kept
	}
	e.regs = w.regs
	e.stack = stack
	w.ring.commit(slot, e)
	w.stats.samples++
	return kept
}

// handOver gives th to the worker with index owner.
func (w *worker) handOver(th *shared, owner int) {
	w.s.workers[owner].inbox.push(th)
}

// push hands an entry without a stack to the coordinator.
func (w *worker) push(e entry) {
	slot := w.ring.slot()
	if slot == nil {
		w.stats.dropped++
		return
	}
	w.ring.commit(slot, e)
}
