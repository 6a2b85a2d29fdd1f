//go:build linux

package perf

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach/internal/phasewalk"
	"github.com/gprof-dev/gprof/attach/internal/yield"
	"github.com/gprof-dev/gprof/event"
)

// Sampling at a varying interval.
//
// A clock event samples at a fixed period: the kernel re-arms its timer a
// period after each expiry. A program whose loop takes a whole number of
// periods (or a period a whole number of loops) is then sampled at the same
// instants of every round, and its functions get the share of those
// instants, not of its time: a 1 ms round of 5:3:2 work sampled at 1 kHz
// showed 41 to 71% for the function that takes 50%, a different figure in
// each run. perf lets its users pick odd rates (99 Hz) against it; gprof's
// default is a round 1 kHz, and a program paced by its own clock can match
// any rate.
//
// So a pacer per CPU (pinned to a CPU, real-time, as ptrace's stoppers
// are) sets its event's period (PERF_EVENT_IOC_PERIOD restarts the timer
// from the moment it is called, with the period given) to a spacing of
// 0.4 to 1.6 intervals (blockWalk; the mean is the interval asked for) for
// the next pacerEvery firings, and wakes after the last of them to draw
// again. A run of firings at one spacing starts at a random phase of a
// program's round, and the spacing is not the round's, so that every
// instant of the round is as likely to be sampled, whatever its period
// (TestBlocksNoLockstep). Waking at every firing instead cost a program
// attached to 9% of its wall time here (a wake-up preempts it, about 85
// µs on this VM); at every fourth, 4-6%, about what perf record -g -p
// costs it (perf's per-thread events at a fixed period: 1.5%). A sample's
// period field keeps the event's nominal interval, which is what a sample
// stands for on average. Where a pacer runs matters too: see pacerHosts
// and runFiring.
//
// Only per-CPU events can be paced: a per-thread event that a thread
// inherits (every thread a launched command starts) has no file
// descriptor, and the kernel passes a period change on to no inherited
// event. Two kinds are: per-CPU events of every task (system-wide, or
// attached processes: layout.go, filter.go), whose clock runs whenever the
// CPU does, paced by run; and per-CPU events kept to a launched command's
// own cgroup (cgroup.go), whose clock runs only while the command does, so
// that no firing can be foreseen: runFiring waits for each pacerEvery-th.
// Per-thread recordings sample at the fixed interval, as perf does, and
// say so (fixedIntervalNotice).

// blockWalk spaces a pacer's firings: the start of each run of
// pacerEvery firings sits at a phase that walks over a span of pacerEvery
// intervals (phasewalk), and a run's spacing takes it from its start to
// the next one's. A run's spacing is then 0.4 to 1.6 intervals, its start
// lands anywhere in a program's round, and the firings stay within a span
// of where a fixed interval would put them, so that a count keeps to the
// time it covers (spacings drawn on their own, half to one and a half
// intervals, gave a 64 ms program 55 to 70 samples).
type blockWalk struct{ phase int64 }

// newBlockWalk starts a walk at a random phase, where it is found in the
// long run: started at the span's edge it first walks toward the middle,
// and a short recording got two firings per CPU fewer than its time
// asked for (a 64 ms program in two threads: 119 to 121 samples for 128
// ms).
func newBlockWalk(rng *rand.Rand, interval int64) blockWalk {
	return blockWalk{phase: rng.Int64N(pacerEvery * interval)}
}

// period returns the spacing of the next pacerEvery firings.
func (w *blockWalk) period(rng *rand.Rand, interval int64) int64 {
	span := pacerEvery * interval
	next := phasewalk.Next(rng, w.phase, span)
	p := (span + next - w.phase) / pacerEvery
	w.phase = next
	return p
}

// Pacers wake this long after the last firing of the period they set,
// and go dormant on a CPU where no target ran for pacerIdle: the event
// then fires at the nominal interval, which costs no wake-ups, until a
// target runs there again (the reader notes it as it decodes the sample;
// the pacer looks every pacerIdle/8).
const (
	pacerMargin = 5 * time.Microsecond
	pacerIdle   = 100 * time.Millisecond
)

// pacing is the pacers of one recording.
type pacing struct {
	stop atomic.Bool
	wg   sync.WaitGroup
	cpus []paced // by CPU
	// wakes counts the pacers' wake-ups; late those that came after the
	// event had fired again at the period set before; thinned the samples
	// the reader dropped from such repeats.
	late, wakes atomic.Int64
	thinned     int64
	// passes counts the pacers' passes through Go's scheduler
	// (yield.Resched).
	passes atomic.Int64
	// noAlarm counts the CPUs whose event started with a whole period
	// (runFiring), where no alarm could be opened.
	noAlarm atomic.Int64
	// lags sums the all-task pacers' last estimates of how long after a
	// due point they set the next period (run), in ns; lagged counts
	// them.
	lags, lagged atomic.Int64
}

// paced is one CPU's pacer as the reader sees it.
//
// A pacer that is held up (the Go runtime preempts goroutines to collect
// garbage, and on a machine busy enough a preempted one may wait long for
// a thread to run it again) leaves its event firing at the period it set
// last, a quarter to two intervals, which would take up to four times the
// samples asked for meanwhile. So it publishes each period it sets, and
// the reader keeps, of the repeats that come before the next, as many as
// the interval asks for.
type paced struct {
	// set and period hold the last pacerHistory settings, the n-th at
	// n%pacerHistory: from set on, the event fires every period.
	set, period [pacerHistory]atomic.Int64
	n           atomic.Int64
	// seen is when the reader last decoded a target's sample here.
	seen atomic.Int64
	// firstEnd, on a CPU of a launched command (runFiring): from the
	// event's first firing there until its pacer sets a whole period
	// (at firstEnd; -1 until it has), the event fires at the spacing of
	// the first part, a fraction of a period. A pacer held up meanwhile
	// (the Go runtime preempts it now and then) leaves it so for
	// milliseconds: the reader keeps one of those samples an interval.
	firstEnd atomic.Int64

	// The reader's own: the index of the setting in force at its last
	// sample here, and that sample's time (0 for none since the setting);
	// the time of the last sample it kept before firstEnd.
	r, kept, firstKept int64

	// off and setting order an all-task pacer's settings (run) with the
	// Control's turning sampling off and on (pause, resume). A period set
	// while the event is disabled restarts it from nothing when it is
	// enabled again: the part of a period it had run before it was
	// disabled is lost to the count, half a sample on average each time
	// sampling was off (attached, 10 ms on and off: 0.91 samples per ms
	// of CPU time, 0.99 with 100 ms). So the pacer sets nothing while off
	// is true, and the event picks up where it was when enabled. The
	// pacer raises setting before it looks at off, and lowers it once its
	// setting is done; pause raises off, then waits for setting to be
	// down: either the pacer sees off, or pause sees it setting. (A lock
	// held by a pacer that the Go runtime stopped, to collect garbage,
	// kept the reader from turning sampling on for milliseconds on a busy
	// machine.)
	off, setting atomic.Bool
	// due is the last firing of the period the pacer set, when it wakes
	// to set the next: the pacer's while off is false, resume's while it
	// is true.
	due atomic.Int64
	// offAt (the reader's) is when the Control last disabled the event
	// (0 before sampling was first on).
	offAt int64
	// tid is the pacer's thread, for resume to wake it.
	tid atomic.Int32
}

// pacerHistory settings a CPU (a second at 1 kHz): the reader
// drains the rings much more often. Where it falls further behind, it
// keeps every sample.
const pacerHistory = 256

// publish records a setting: from set on, the event fires every period.
func (c *paced) publish(set, period int64) {
	n := c.n.Load()
	c.set[n%pacerHistory].Store(set)
	c.period[n%pacerHistory].Store(period)
	c.n.Store(n + 1)
}

// keep says whether to keep a target's sample at t (in time order), and
// notes that a target ran here.
func (c *paced) keep(t, interval int64) bool {
	if c.seen.Load() < t {
		c.seen.Store(t)
	}
	if end := c.firstEnd.Load(); end < 0 || t < end {
		if c.firstKept == 0 || t-c.firstKept >= interval {
			c.firstKept = t
			return true
		}
		return false
	}
	n := c.n.Load()
	if c.r < n-pacerHistory {
		c.r, c.kept = n-pacerHistory, 0
	}
	for c.r+1 < n && c.set[(c.r+1)%pacerHistory].Load() <= t {
		c.r, c.kept = c.r+1, 0
	}
	if c.r < 0 {
		return true
	}
	// The last firing the setting was for: the ones after it are
	// repeats, while the pacer was held up.
	first := c.set[c.r%pacerHistory].Load() + pacerEvery*c.period[c.r%pacerHistory].Load()
	if t < first+interval/4 || c.kept == 0 {
		c.kept = t
		return true
	}
	// A repeat: kept when it is the first in its interval since the
	// setting's first firing.
	if (t-first)/interval > (c.kept-first)/interval {
		c.kept = t
		return true
	}
	return false
}

// startPacing starts a pacer for each per-CPU clock event. It returns nil
// where the events cannot be paced (per-thread events, or an event that
// does not count time).
func (s *perfSession) startPacing() *pacing {
	if s.layout != perCPU || !s.periodIsNs || len(s.ringList) == 0 {
		return nil
	}
	interval := time.Duration(s.attr.Sample)
	p := &pacing{cpus: make([]paced, maxCPU(s.cpus)+1)}
	now := event.Now()
	for i := range p.cpus {
		p.cpus[i].seen.Store(now)
		p.cpus[i].r = -1
		// Sampling starts off (-D, --control) until resume.
		p.cpus[i].off.Store(s.opts.Control != nil && !s.ctl.on)
	}
	old := runtime.GOMAXPROCS(0)
	// Each pacer keeps a P (see setPeriod), and so does the reader
	// (rawPoll), beside what the rest of gprof uses.
	if want := runtime.NumCPU() + len(s.cpus) + 2; old < want {
		runtime.GOMAXPROCS(want)
	} else {
		old = 0
	}
	var armed sync.WaitGroup
	var hosts map[int]int
	if s.cgroup == nil {
		hosts = pacerHosts(s.cpus)
	}
	for cpu, r := range s.rings {
		host, ok := hosts[cpu]
		if s.cgroup == nil && !ok {
			continue
		}
		p.wg.Add(1)
		armed.Add(1)
		go func() {
			defer p.wg.Done()
			if s.cgroup != nil {
				alarm := func(after int64) (*alarm, error) { return s.openAlarm(cpu, after) }
				p.runFiring(r.fd, cpu, interval, alarm, armed.Done)
			} else {
				p.run(r.fd, cpu, host, interval, armed.Done)
			}
		}()
	}
	// A launched command starts once every CPU's event has its first
	// period (runFiring).
	armed.Wait()
	go func() {
		p.wg.Wait()
		if old > 0 {
			runtime.GOMAXPROCS(old)
		}
	}()
	return p
}

// keep says whether to keep a target's sample (the reader calls it for
// each, in the order of its CPU's ring). Only the paced clock's own
// samples repeat while a pacer is held up: the other events that share
// its ring (tracepoints, probes: every hit a sample) and switch-outs are
// all kept. Thinning those too lost 6 of 200 hits of a USDT probe that
// fired every 150 µs while a pacer was held up under load.
func (p *pacing) keep(e *event.Sample, interval int64) bool {
	if p == nil || e.Event != 0 || e.Switch || e.CPU < 0 || e.CPU >= len(p.cpus) {
		return true
	}
	if p.cpus[e.CPU].keep(e.Time, interval) {
		return true
	}
	p.thinned++
	return false
}

// pause stops the pacers setting periods (run): the Control is about to
// disable the events.
func (p *pacing) pause() {
	if p == nil {
		return
	}
	for i := range p.cpus {
		c := &p.cpus[i]
		c.off.Store(true)
		for c.setting.Load() {
			// A pacer between its look at off and the end of its
			// ioctl: microseconds, unless the Go runtime stopped it.
			sleepUntil(event.Now() + 20_000)
		}
	}
}

// disabled notes that the Control disabled cpu's event at t.
func (p *pacing) disabled(cpu int, t int64) {
	if p != nil && cpu >= 0 && cpu < len(p.cpus) {
		p.cpus[cpu].offAt = t
	}
}

// resume tells cpu's pacer that the Control enabled its event at t. The
// event's next firings come as much later as it was off, and so do the
// pacer's due point and the setting the reader thins repeats by; the
// time it was off does not count toward the pacer's going dormant
// either. The pacer is woken to sleep until its moved due point. (The
// caller gives the latest the event can have been enabled, and the
// earliest it can have been disabled: a pacer that woke before its
// event's last firing would lose it.)
func (p *pacing) resume(cpu int, t int64) {
	if p == nil || cpu < 0 || cpu >= len(p.cpus) {
		return
	}
	c := &p.cpus[cpu]
	if c.offAt != 0 {
		shift := t - c.offAt
		c.due.Add(shift)
		if n := c.n.Load(); n > 0 {
			last := (n - 1) % pacerHistory
			c.publish(c.set[last].Load()+shift, c.period[last].Load())
		}
		c.seen.Add(shift)
	} else {
		c.seen.Store(t)
	}
	c.off.Store(false)
	if tid := c.tid.Load(); tid != 0 {
		// The runtime's own preemption signal: it takes one it did not
		// send for a spurious one, and the pacer's sleep ends. Raw, as
		// the reader's other calls while it applies a change.
		unix.RawSyscall(unix.SYS_TGKILL, uintptr(unix.Getpid()), uintptr(tid), uintptr(unix.SIGURG))
	}
}

// end stops the pacers and waits for them.
func (p *pacing) end() {
	if p == nil {
		return
	}
	p.stop.Store(true)
	p.wg.Wait()
}

// pinPacer locks the calling goroutine to its thread and that thread to
// cpu, ahead of the targets (yield.Ahead: real-time where gprof may, so
// that a pacer runs the moment its event fires; SCHED_FIFO above the
// reader's priority). Where it is not, a pacer that waits for the
// scheduler's tick to preempt a target leaves the event at the period it
// had meanwhile, and the period it sets then restarts the timer: the
// firings' spacing then varies by that wait, up to a tick (run takes its
// average off the next periods). It reports false, the thread unlocked,
// where cpu is not allowed (a cpuset); the event then keeps its fixed
// interval. The function returned undoes the rest.
func pinPacer(cpu int) (unpin func(), ok bool) {
	runtime.LockOSThread()
	var old, set unix.CPUSet
	haveOld := unix.SchedGetaffinity(0, &old) == nil
	set.Set(cpu)
	if unix.SchedSetaffinity(0, &set) != nil {
		runtime.UnlockOSThread()
		return nil, false
	}
	restore, _ := yield.Ahead(2)
	return func() {
		restore()
		// The thread goes back to the runtime's pool: not pinned.
		if haveOld {
			unix.SchedSetaffinity(0, &old)
		}
		runtime.UnlockOSThread()
	}, true
}

// run paces the event fd of cpu from the CPU host until the recording
// ends; it calls armed once it has begun.
//
// It wakes just after the last firing of the period it set (due), and
// sets the next: the event fires a period after that, whenever it was
// set. So the firings' spacing holds the time from the due point to the
// new setting too (a pacer on another CPU: its wake-up and the interrupt
// that carries its ioctl, about 50 µs here); the pacer takes its running
// average (lag) off the next block of firings, a pacerEvery-th of it
// from each.
func (p *pacing) run(fd, cpu, host int, interval time.Duration, armed func()) {
	unpin, ok := pinPacer(host)
	armed()
	if !ok {
		return
	}
	defer unpin()
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0)

	c := &p.cpus[cpu]
	c.tid.Store(int32(unix.Gettid()))
	defer c.tid.Store(0)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(cpu)))
	i := int64(interval)
	dormant := true
	walk := newBlockWalk(rng, i)
	var period, lag int64
	var resched yield.Resched
	for !p.stop.Load() {
		now := event.Now()
		c.setting.Store(true)
		if c.off.Load() {
			// Until resume wakes it.
			c.setting.Store(false)
			sleepUntil(now + int64(pacerIdle/8))
			continue
		}
		due := c.due.Load()
		onTime := false
		switch {
		case now-c.seen.Load() > int64(pacerIdle):
			if !dormant {
				dormant = true
				c.publish(now, i)
				setPeriod(fd, i)
			}
			c.setting.Store(false)
			sleepUntil(now + int64(pacerIdle/8))
			continue
		case dormant:
			dormant = false
		case now < due+int64(pacerMargin):
			c.setting.Store(false)
			sleepUntil(due + int64(pacerMargin))
			continue
		default:
			p.wakes.Add(1)
			if now-due >= period {
				// Held up (the runtime may preempt the pacer, and on a
				// busy machine resume it much later): the event fired
				// again since, at the period set.
				p.late.Add(1)
			} else {
				onTime = true
			}
		}
		period = max(walk.period(rng, i)-lag/pacerEvery, minPeriod)
		setPeriod(fd, period)
		// The ioctl has reached the event by now (from another CPU, an
		// interrupt that may take long on some VMs): the new period's
		// firings come no sooner than this reckons, and none comes
		// before the reader sees the setting.
		set := event.Now()
		c.publish(set, period)
		if onTime {
			lag += (set - due - lag) / 8
		}
		c.due.Store(set + pacerEvery*period)
		c.setting.Store(false)
		if resched.Due() {
			// The event runs pacerEvery firings on its own now: a
			// moment when a late hand-back costs nothing.
			resched.Pass()
		}
	}
	c.setting.Store(true)
	if !c.off.Load() {
		c.publish(event.Now(), i)
		setPeriod(fd, i)
	}
	c.setting.Store(false)
	p.passes.Add(int64(resched.Count))
	if lag > 0 {
		p.lags.Add(lag)
		p.lagged.Add(1)
	}
}

// pacerHosts picks the CPU each pacer runs on: another CPU than its
// event's, where gprof may run on two or more of the events' CPUs. A
// pacer wakes just after its event has fired, and sets the next period
// from then on: on the event's own CPU, its wake-up preempts whatever ran
// there, and the scheduler then picks afresh, at a point where the
// event's next firing is a whole period away. Where the target shared the
// CPU with a busy loop, its turns on the CPU began at those points more
// often than they ended there, and lost the part of a period before
// their first sample: a busy thread attached beside two busy loops got
// 0.89 to 0.94 samples per ms of its CPU time (perf record -p, whose
// events count the thread's own time: 1.000). From another CPU, the
// ioctl reaches the event by an interrupt, which does not reschedule, and
// the pacer's own wake-ups come at no particular point of that CPU's
// firings. Each CPU gprof may run on hosts one pacer: the next one's
// (cyclically). A CPU gprof may not run on has no pacer: its event keeps
// the fixed interval.
func pacerHosts(cpus []int) map[int]int {
	var allowed unix.CPUSet
	if unix.SchedGetaffinity(0, &allowed) != nil {
		allowed.Zero()
		for _, c := range cpus {
			allowed.Set(c)
		}
	}
	var own []int
	for _, c := range cpus {
		if allowed.IsSet(c) {
			own = append(own, c)
		}
	}
	slices.Sort(own)
	hosts := make(map[int]int, len(own))
	for k, c := range own {
		hosts[c] = own[(k+1)%len(own)]
	}
	return hosts
}

// runFiring paces the event fd of cpu that counts a launched command's
// cgroup (cgroup.go) until the recording ends. That event's clock runs
// only while the command runs on cpu, so its firings cannot be foreseen in
// wall time as run foresees an all-task event's: the pacer waits for each
// (its ring wakes pollers at every sample, on this CPU) and then sets the
// next period from its walk (blockWalk; the mean is the interval asked
// for). Its wake-up preempts the command on cpu, whose
// event is then scheduled out: the ioctl needs no interrupt to another
// CPU, and the new period starts when the command runs again. A pacer
// held up leaves the event firing at the last period set, which is still
// a random one.
//
// The event's first firing comes at a random part of a period of the
// command's time on cpu, and the alarm (openAlarm) wakes the pacer just
// after it to set a whole one. Started with a whole period, each CPU's
// event lost the command's last part of a period there, up to half a
// sample for each CPU it ran on: testdata/hop.c, which burns 0.5 ms of
// its CPU time on a CPU it had not run on, got 0.09 samples there on
// average at 1 kHz (1 ms: 0.51), where a random first part gives it 0.5
// (TestFirstVisit). Until the pacer sets a whole period, the event fires
// at the part's spacing: the part is at least an eighth of a period, and
// the reader thins what comes before the pacer (paced.firstEnd).
//
// It calls armed once the event has its first period: the command starts
// after.
func (p *pacing) runFiring(fd, cpu int, interval time.Duration, openAlarm func(after int64) (*alarm, error), armed func()) {
	unpin, ok := pinPacer(cpu)
	if !ok {
		armed()
		return
	}
	defer unpin()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(cpu)))
	i := int64(interval)
	walk := newBlockWalk(rng, i)
	draw := func() int64 { return walk.period(rng, i) }
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	c := &p.cpus[cpu]
	whole := draw()
	part := max(whole/8, rng.Int64N(whole)+1, minPeriod)
	// The event fires each period of the command's time here from setAt,
	// the event's count when the pacer last set one (the count stands
	// still while the pacer runs: the command is off this CPU then).
	var setAt, period int64
	set := func(d int64) {
		setPeriod(fd, d)
		setAt, period = eventCount(fd), d
	}
	al, err := openAlarm(part + min(max(part/4, 2000), alarmLag))
	if err == nil {
		c.firstEnd.Store(-1)
		set(part)
		pfd = append(pfd, unix.PollFd{Fd: int32(al.fd), Events: unix.POLLIN})
	} else {
		p.noAlarm.Add(1)
		set(whole)
	}
	armed()
	var resched yield.Resched
	for !p.stop.Load() {
		// Every pacerPollMs at least, to notice the recording's end.
		if rawPoll(pfd, pacerPollMs) != nil {
			continue
		}
		next := int64(0)
		switch {
		case len(pfd) > 1 && pfd[1].Revents&unix.POLLIN != 0:
			// The first firing: the rest of the block is whole
			// periods.
			al.close()
			pfd = pfd[:1]
			c.firstEnd.Store(event.Now())
			next = whole
		case pfd[0].Revents&unix.POLLIN != 0:
			p.wakes.Add(1)
			next = draw()
		default:
			continue
		}
		if now := eventCount(fd); now >= setAt && setAt >= 0 {
			next = caughtUp(next, (now-setAt)%period, i)
		}
		set(next)
		if resched.Due() {
			resched.Pass() // as run does
		}
	}
	if len(pfd) > 1 {
		al.close()
		c.firstEnd.Store(event.Now())
	}
	setPeriod(fd, i)
	p.passes.Add(int64(resched.Count))
}

// caughtUp returns the period a firing pacer sets, next drawn, when it
// comes late ns of the command's time after the event's last firing (the
// event went on at the period set before meanwhile). A period set
// restarts the event's clock, so the time it came late would be lost:
// the next gap between samples would be that much longer, and the count
// that much short. So the next pacerEvery firings come late/pacerEvery
// sooner each, which ends their block where it would have ended (but
// none at under half the spacing drawn: a burst of firings would stand
// for time the command ran before them), and the first of them at most
// 1.95 intervals after the last. Usually the pacer
// comes within 10-50 µs (it preempts the command on its CPU); Go's
// scheduler holds it up now and then (preempted by Go's monitor thread,
// it waits for another of gprof's threads, not real-time, to hand it
// back), beside two CPU-bound loops at about one block end in 150, for
// up to 1.2 ms of the command's time: gaps of up to 2.4 intervals.
func caughtUp(next, late, interval int64) int64 {
	p := max(next-late/pacerEvery, next/2)
	return max(min(p, 2*interval-interval/20-late), minPeriod)
}

// eventCount reads a clock event's count (ns), or -1.
func eventCount(fd int) int64 {
	var v uint64
	_, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&v)), 8)
	if e != 0 {
		return -1
	}
	return int64(v)
}

// minPeriod is the kernel's floor for clock events' periods, in ns.
const minPeriod = 10000

// alarmLag is at most how long after the event's first firing on a CPU its
// alarm fires, in the command's time there: both clocks start as the
// command's cgroup is scheduled in, microseconds apart at most.
const alarmLag = 20 * int64(time.Microsecond)

// alarm is a second event of the command's cgroup on one CPU, which
// wakes its pacer when it fires, once.
type alarm struct {
	fd  int
	mem []byte
}

// openAlarm opens an alarm for cpu that fires after the command has run
// there for after ns (by the sampling event's clock), enabled: the
// pacer calls it on cpu, where the command is not running.
func (s *perfSession) openAlarm(cpu int, after int64) (*alarm, error) {
	a := unix.PerfEventAttr{
		Type:   s.attr.Type,
		Config: s.attr.Config,
		Sample: uint64(after),
		Wakeup: 1,
		// The same clock: counting the same modes.
		Bits: s.attr.Bits & (unix.PerfBitExcludeUser | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv | unix.PerfBitExcludeIdle),
	}
	a.Size = uint32(unsafe.Sizeof(a))
	fd, err := s.eventOpen(&a, -1, cpu)
	if err != nil {
		return nil, err
	}
	// A ring to be woken by: its header-only samples are never read,
	// and a read-only ring overwrites them.
	mem, err := unix.Mmap(fd, 0, 2*os.Getpagesize(), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &alarm{fd: fd, mem: mem}, nil
}

func (a *alarm) close() {
	unix.Munmap(a.mem)
	unix.Close(a.fd)
}

// pacerPollMs is how long a firing pacer waits at most. pacerEvery: a
// pacer wakes at every pacerEvery-th sample of its CPU's event, and the
// period it draws then holds for the next pacerEvery samples: a run of
// samples at one drawn spacing still starts at a random phase, so no
// instant of a program's round is favoured. Waking less often costs the
// command fewer context switches. A period set restarts the event's
// timer, so what the command ran between a sample and its pacer's
// wake-up would be lost to the count (caughtUp gives it back), while the
// cgroup's clock runs ahead of the command's own CPU clock (the switches
// into and out of it are its time). Waking at every sample, 1 s of the
// command's CPU got 928 to 958 samples at 1 kHz; at every 4th, 987 to
// 1,003; with no pacer, 1,020 to 1,050. With caughtUp, 2 s of a busy
// thread's CPU got 1.002 to 1.004 samples per ms of it quiet, 1.006 to
// 1.008 beside two CPU-bound loops (0.993-0.995 and 0.990-0.994 without).
const (
	pacerPollMs = 20
	pacerEvery  = 4
)

// setPeriod makes the event fire d ns from now, and every d ns after that
// until set again.
//
// The pacer's system calls are raw: the goroutine keeps its P (the Go
// runtime's license to run Go code; GOMAXPROCS counts the pacers) while
// it sleeps, rather than hand it over and, on waking, wait for one, which
// took milliseconds on a busy machine (the garbage collector's idle
// workers take every idle P). A stop-the-world waits for the sleep to end,
// an interval at most.
func setPeriod(fd int, d int64) {
	v := uint64(max(d, minPeriod))
	unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_PERIOD, uintptr(unsafe.Pointer(&v)))
}

// sleepUntil sleeps until t (event.Now's clock, CLOCK_MONOTONIC) on this
// thread: a timer of this CPU wakes it. A signal (the runtime's
// preemption) ends it early.
func sleepUntil(t int64) {
	ts := unix.NsecToTimespec(t)
	unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
}

func maxCPU(cpus []int) int {
	m := 0
	for _, c := range cpus {
		m = max(m, c)
	}
	return m
}

// paceable reports whether the targets are better sampled by per-CPU
// events, whose interval can be varied: where the kernel allows them, for
// a clock event, unless off-CPU stacks are asked for (per CPU, every
// context switch on the machine would take one) or a test forces a layout.
func (s *perfSession) paceable() bool {
	if forceLayout != nil {
		return *forceLayout == perCPU
	}
	return s.periodIsNs && !s.opts.OffCPU && s.tryCPUWide() == nil
}

// launchCgroup moves a launched command's helper, pid, to a cgroup of its
// own where its events can be paced (see cgroup.go), and reports whether
// it did; where it cannot, the command is sampled per thread.
func (s *perfSession) launchCgroup(pid int) bool {
	if !s.paceable() {
		return false
	}
	cg, err := newCgroup()
	if err == nil {
		// The kernel may lack cgroup events (CONFIG_CGROUP_PERF): try
		// one before the helper moves.
		a := s.cpuAttr()
		a.Bits |= unix.PerfBitDisabled
		var fd int
		if fd, err = perfEventOpen(&a, cg.fd, s.cpus[0], -1, unix.PERF_FLAG_FD_CLOEXEC|unix.PERF_FLAG_PID_CGROUP); err == nil {
			unix.Close(fd)
			err = cg.add(pid)
		}
		if err != nil {
			cg.remove()
		}
	}
	if err != nil {
		s.cgroupErr = err
		return false
	}
	s.cgroup = cg
	return true
}

// fixedIntervalNotice says why a recording samples at a fixed interval.
func (s *perfSession) fixedIntervalNotice() string {
	why := "per-CPU events, whose interval gprof varies, need root, CAP_PERFMON or kernel.perf_event_paranoid<=0, no --off-cpu, and a command launched in a cgroup of its own"
	if len(s.opts.Command) == 0 && s.filterErr != nil {
		why = "attached to running processes, gprof samples them per CPU, where it varies the interval, only with a BPF program keeping their samples alone, which could not be loaded (" + walkerWhy(s.filterErr) + ")"
	} else if len(s.opts.Command) == 0 {
		why = "per-CPU events, whose interval gprof varies, need root, CAP_PERFMON or kernel.perf_event_paranoid<=0, and no --off-cpu"
	} else if s.cgroupErr != nil {
		why = "gprof could not give the command a cgroup of its own (" + s.cgroupErr.Error() + ")"
	}
	return "sampling at a fixed interval (per-thread perf events): a program that loops in step with it may show some functions more than their share; " + why
}

// openLaunched opens the per-CPU events for a launched command whose
// helper, pid, has not exec'd yet, disabled: enableLaunched enables them
// just before the helper may exec, so that the rings do not fill with the
// machine's other processes while the recording is set up. The helper's
// records until its exec are dropped (dropHelper); the command's own,
// from its first instruction, are kept.
func (s *perfSession) openLaunched(pid int) error {
	s.layout = perCPU
	if err := s.openCPUs(); err != nil {
		return err
	}
	for _, fd := range s.fds {
		unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0)
	}
	// No filter: the kernel samples the command's cgroup only. A filter
	// that follows FORK records would drop a child's exec when its CPU's
	// ring is decoded before its parent's, where the FORK is (the quiet
	// suite's TestLaunchFollowsChildren and TestFaultExec/launch: children
	// left named sh).
	s.launched = map[int]int64{pid: 0}
	return nil
}

// enableLaunched enables the events openLaunched opened.
func (s *perfSession) enableLaunched() {
	if s.launched == nil {
		return
	}
	for _, fd := range s.fds {
		if s.opts.Control != nil && !s.ctl.on && !s.ctl.sideband[fd] {
			continue // sampling starts off (-D, --control): see control.go
		}
		unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0)
	}
	s.sampling = event.Now()
	// Until its exec is seen, every record of the helper's is its own
	// (its Go runtime starting, then the exec): negative, not exec'd.
	for pid := range s.launched {
		s.launched[pid] = -math.MaxInt64
	}
}

// releasing notes that the launched command is released now: should the
// exec's record be lost (on a busy machine a ring may overflow), the
// helper's records are taken to be those from before this (it execs at
// once after), rather than drop the whole command. Released before its
// runtime had started, the helper's own samples until its exec, in
// batches before the exec's, were taken for the command's: 73-77 samples
// for a 64 ms program.
func (s *perfSession) releasing() { s.releasedAt = event.Now() }

// dropHelper drops, from a batch in time order, the records of a launched
// command's helper from before its exec (gprof's own code and threads, which
// the exec ends), and notes the exec's time: a record from before it may
// come in a later batch, from a ring drained before the exec's was written.
func (s *perfSession) dropHelper(evs []event.Event) []event.Event {
	// The exec first: the helper's other threads end before it, in the
	// same batch.
	for _, e := range evs {
		switch e := e.(type) {
		case *event.Comm:
			if at, ok := s.launched[e.Pid]; ok && e.Exec && at <= 0 {
				s.launched[e.Pid] = e.Time
			}
		case *event.Lost:
			for pid, at := range s.launched {
				if at == -math.MaxInt64 && s.releasedAt != 0 {
					s.launched[pid] = -s.releasedAt
				}
			}
		}
	}
	kept := evs[:0]
	for _, e := range evs {
		pid := -1
		switch e := e.(type) {
		case *event.Sample:
			pid = e.Pid
		case *event.Map:
			pid = e.Pid
		case *event.Fork:
			pid = e.Pid
		case *event.Exit:
			pid = e.Pid
		case *event.Comm:
			if at := s.launched[e.Pid]; e.Exec && e.Time == at {
				kept = append(kept, e)
				continue
			}
			pid = e.Pid
		}
		if at, ok := s.launched[pid]; ok && event.EventTime(e) < max(at, -at) {
			continue
		}
		kept = append(kept, e)
	}
	clear(evs[len(kept):])
	return kept
}

// rawPoll is poll(2) for the reader of a paced recording, raw for the same
// reason as the pacers' calls (see setPeriod): the rings take every
// process's samples, and a reader that waited for a P on a busy machine
// (the P's thread being one of many waiting for a CPU) let them overflow.
// A signal ends it early.
func rawPoll(fds []unix.PollFd, timeoutMs int) error {
	_, _, e := unix.RawSyscall(unix.SYS_POLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(timeoutMs))
	if e != 0 {
		return e
	}
	return nil
}
