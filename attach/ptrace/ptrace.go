//go:build linux

package ptrace

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/proc"
	"github.com/gprof-dev/gprof/attach/internal/procmaps"
	"github.com/gprof-dev/gprof/event"
)

// The ptrace backend samples where perf_event_open is denied. A stopper
// per CPU (worker.go), pinned there, wakes at each tick, stops the target
// threads running on its CPU (seize, interrupt, wait), reads their
// registers and a copy of their stacks, and lets them go again (the
// py-spy model, per CPU). Nothing stays traced between ticks, so new
// threads need no ptrace event handling. A coordinator (this file,
// targets.go, deliver.go) keeps the list of threads, mappings and names up
// to date from /proc and turns what the stoppers saw into events.

const (
	ptMaxRate     = 1000                   // samples per second per thread
	ptSlowPeriod  = 100 * time.Millisecond // rescan maps, names, children
	ptCoordPeriod = 10 * time.Millisecond  // find new threads, deliver samples
	ptStopLimit   = 20 * time.Millisecond  // a stop slower than this is late
	ptAbandon     = 2 * time.Second        // wait for a stuck stopper
	ptDrainLimit  = 200 * time.Millisecond // wait for late stops at the end
	ptReleaseWait = time.Second            // and then for the kernel to let go of those still pending
	ptExecLimit   = 5 * time.Second        // launched helper's exec
	// ptWakeSlack is how long a stopper may take, from its timer to its
	// first look at the clock, for a thread it preempted to count as
	// running at the tick.
	ptWakeSlack   = 20 * time.Microsecond
	ptMaxStack    = 1 << 20
	ptDefaultStak = 16 << 10
)

// The ptrace backend comes after perf: Auto uses it where perf events are
// denied.
func init() {
	attach.Register(attach.Driver{Name: attach.Ptrace, Order: 20, Start: recordPtrace, Control: true, Dump: dumpStacks})
}

func recordPtrace(ctx context.Context, opts attach.Options, h event.Handler) (attach.Result, error) {
	res := attach.Result{ExitCode: -1, Backend: "ptrace", Event: "ptrace-timer"}
	s := &ptSampler{started: time.Now(),
		ctx:        ctx,
		opts:       opts,
		h:          h,
		self:       os.Getpid(),
		procs:      map[int]*ptProc{},
		pending:    map[int]bool{},
		nudged:     make(chan struct{}, 1),
		launchCode: -1,
		buf:        make([]byte, 4096),
	}
	s.interval = opts.Interval
	if s.interval <= 0 {
		s.interval = time.Millisecond
	}
	if floor := time.Second / ptMaxRate; s.interval < floor {
		s.notice(fmt.Sprintf("the ptrace backend stops a thread for each sample, so it samples at most %d times a second (asked for every %v)", ptMaxRate, s.interval))
		s.interval = floor
	}
	res.Interval = s.interval
	if opts.Control != nil {
		s.paused.Store(!opts.Control.StartsOn())
	}
	s.stackSize = opts.StackSize
	if s.stackSize <= 0 {
		s.stackSize = ptDefaultStak
	}
	s.stackSize = min(s.stackSize, ptMaxStack)
	if opts.Kernel {
		s.notice("the ptrace backend records no kernel frames")
	}

	if len(opts.Command) > 0 {
		l, err := proc.Launch(opts.Command, opts.Env, opts.Dir)
		if err != nil {
			return res, err
		}
		s.launched = l
	} else {
		for _, pid := range opts.Pids {
			if pid == s.self {
				return res, fmt.Errorf("pid %d is gprof itself", pid)
			}
			if !proc.ProcessExists(pid) {
				return res, fmt.Errorf("pid %d: %w", pid, attach.ErrNoSuchProcess)
			}
		}
	}

	// While recording, each ptrace stop would send gprof a SIGCHLD, which
	// the Go runtime handles on some thread, often a stopper's; and the
	// stoppers must find a free P whenever they return from a system call,
	// or wait for one to be handed over from another CPU.
	defer quietStops()()
	// A stopper's wait for a stop ends at its timer's signal (waitTimer),
	// which must therefore end the system call it arrives in. Where the
	// recording gives up on a stuck stopper (ptAbandon, below) the flag
	// comes back while that stopper may still wait: its wait then lasts
	// until the thread it waits for stops, as the stuck one's does anyway.
	restoreWaits, timed := interruptibleWaits()
	defer restoreWaits()
	s.timedWaits = timed
	defer raiseProcs(len(proc.OnlineCPUs()))()

	// The coordinator's own ptrace requests (the probe) must come from the
	// thread that seized, so it runs locked to its thread; if a probed
	// thread could not be let go, the goroutine ends still locked, the
	// runtime ends the thread, and the kernel detaches what it traced.
	var err error
	var coordTid int
	var traced bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		coordTid = unix.Gettid()
		err = s.run()
		if len(s.pending) == 0 && s.seized == 0 {
			runtime.UnlockOSThread()
		} else {
			traced = true
		}
	}()
	select {
	case <-done:
		if traced {
			waitThreadGone(coordTid, time.Second)
		}
	case <-ctx.Done():
		select {
		case <-done:
		case <-time.After(ptAbandon):
			// The coordinator is stuck waiting for a thread that went into
			// an uninterruptible sleep as it was probed. Stop waiting for
			// it: it will finish when the thread wakes (or the kernel lets
			// the thread go when gprof exits), but it must no longer call
			// the handler.
			s.mu.Lock()
			s.abandoned = true
			s.mu.Unlock()
			tid := s.waiting.Load()
			if opts.Notice != nil {
				opts.Notice(fmt.Sprintf("ptrace: thread %d did not stop when interrupted (uninterruptible sleep?); stopped sampling without it", tid))
			}
			if s.launched != nil {
				// Not waited for: a stopper may still trace one of its
				// threads, and a wait could take that thread's stop.
				s.launched.Signal(unix.SIGTERM)
			}
			return res, nil
		}
	}
	if ptStatsHook != nil {
		ptStatsHook(s.stats)
	}
	res.Stats = s.resultStats()
	if s.priority != "fifo" && s.priority != "" {
		res.RateAdvice = "gprof's samplers could not run ahead of the targets (no CAP_SYS_NICE): run it as root, or raise its RLIMIT_RTPRIO; or lower the rate (-r)"
		if os.Geteuid() == 0 {
			// Root without the capability: a container's default.
			res.RateAdvice = "gprof's samplers could not run ahead of the targets (root, but without CAP_SYS_NICE, as in a container): grant it (docker run --cap-add SYS_NICE), or lower the rate (-r)"
		}
	} else {
		res.RateAdvice = "lower the rate (-r), or allow perf events (kernel.perf_event_paranoid) for the perf backend"
	}
	res.End = event.Now()
	if s.launched != nil {
		res.ExitCode = s.finishLaunched()
	}
	return res, err
}

// waitThreadGone waits up to limit for thread tid of this process to end.
func waitThreadGone(tid int, limit time.Duration) {
	path := fmt.Sprintf("/proc/self/task/%d", tid)
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); {
		if _, err := os.Stat(path); err != nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// ptStatsHook, when set by a test, receives each recording's counts.
var ptStatsHook func(ptStats)

// ptSampler is the state of one recording: the coordinator's, touched by
// its goroutine only, but for what it hands the stoppers (see table.go).
type ptSampler struct {
	ctx      context.Context
	opts     attach.Options
	h        event.Handler
	interval time.Duration

	// mu guards abandoned. waiting is the thread the coordinator waits
	// for, for recordPtrace to name if it gives up on it.
	mu        sync.Mutex
	abandoned bool
	waiting   atomic.Int64

	// timedWaits says the stoppers may wait for a stop with a timer
	// (interruptibleWaits).
	timedWaits bool

	stackSize int
	self      int

	procs map[int]*ptProc
	order []int // pids in order of discovery, for a stable order of events

	launched   *proc.Launched
	launchGone bool // the launched process exited
	launchCode int  // its exit code, if a stopper's wait4 reaped it
	reaped     bool
	aborted    bool // the command never ran

	// The stoppers, one per CPU; byCPU maps a CPU to its stopper's index.
	workers []*worker
	byCPU   []int
	stop    atomic.Bool
	// workersDone receives a value as each stopper ends; workersReady is
	// done once each is on its CPU (see startWorkers).
	workersDone  chan struct{}
	workersReady sync.WaitGroup
	// threads holds every thread handed to the stoppers (the gone ones
	// too, until their owner closed their files).
	threads []*shared
	batch   []*entry
	// noChildFiles says /proc/PID/task/TID/children is missing here.
	noChildFiles bool

	// pending holds the tids the coordinator seized (to probe) that did
	// not stop in time; seized is the one it is probing now, or the
	// launched command it holds at its exec (heldTid, see startLaunched).
	pending map[int]bool
	seized  int
	heldTid int
	// heldOwner is the stopper the held command was handed to.
	heldOwner int
	// nudged wakes the coordinator before its period is over (nudge).
	nudged chan struct{}

	// sample is handed to the handler for every sample, which must not
	// keep it (see Handler).
	sample event.Sample
	one    [1]uint64
	buf    []byte
	path   []byte

	stats    ptStats
	priority string // how the stoppers got ahead of their targets
	noticed  map[string]bool

	// started is when recording began; setup how long it took to have
	// every target thread found and the stoppers running.
	started time.Time
	setup   time.Duration

	// sweepGen is raised when a cold thread ran: every stopper then looks
	// at all its cold threads (see coldAfter, checkCold).
	sweepGen atomic.Uint64

	// paused: sampling is off (Options.Control); gen counts the times it
	// was turned on again (see control.go).
	paused atomic.Bool
	gen    atomic.Uint64
}

type ptProc struct {
	pid int
	sh  *sharedProc
	// only, when set, holds the threads sampled alone (-t); the process's
	// other threads and its children are not sampled.
	only    map[int]bool
	threads map[int]*ptThread
	tids    []int
	exec    []ptRange // executable mappings, sorted
	all     []ptRange // every mapping, sorted
	seen    map[procmaps.Key]bool
	exe     [2]uint64 // dev, inode of /proc/PID/exe, to notice exec
	mapsAt  int64
	denied  bool // seizing failed with EPERM; left alone
	// nextScan is when its threads are next listed: listing 10,000 of
	// them takes milliseconds, so a process is listed at most every
	// scanCostFactor times what its last listing cost.
	nextScan time.Time
	// scanCost is what listing its threads took last (the coordinator's
	// CPU time): only a process cheap to list is listed at a nudge.
	scanCost time.Duration
	// nextCold is when its CPU clock is next read (checkCold), coldAt
	// when it was last; slowAt when its names and mappings were last
	// reread.
	nextCold, coldAt, slowAt time.Time
	// childrenSeen is its threads' CPU time seen when findChildren last
	// looked for their children.
	childrenSeen int64
}

// hot lists the threads of pr that their owners look at every tick.
func (pr *ptProc) hot() []*shared {
	var hot []*shared
	for _, th := range pr.threads {
		if !th.sh.isCold.Load() && !th.sh.gone.Load() {
			hot = append(hot, th.sh)
		}
	}
	return hot
}

type ptThread struct {
	comm string
	// base is the thread's CPU time at its previous sample, or when it was
	// first seen; gen the turn of sampling on it counts from (control.go).
	base int64
	gen  uint64
	sh   *shared
}

type ptRange struct{ start, end uint64 }

// emit hands e to the handler unless recordPtrace has returned.
func (s *ptSampler) emit(e event.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.abandoned {
		s.h(e)
	}
}

func (s *ptSampler) notice(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.abandoned {
		return
	}
	if s.noticed == nil {
		s.noticed = map[string]bool{}
	}
	if s.opts.Notice != nil && !s.noticed[msg] {
		s.noticed[msg] = true
		s.opts.Notice(msg)
	}
}

// run finds the targets, starts the stoppers, and until the recording
// ends turns what they see into events and keeps the targets' threads,
// names and mappings up to date.
func (s *ptSampler) run() (err error) {
	// The coordinator paces its work by the CPU time it took (paced),
	// which its own thread's clock tells.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("ptrace sampler: panic: %v", p)
			if s.seized != 0 {
				// The thread may or may not have stopped; let the drain
				// below find out.
				s.pending[s.seized] = true
				s.seized = 0
			}
		}
		s.stopWorkers()
		s.drain()
	}()

	if s.launched != nil {
		// Probing the helper, still blocked before its exec, finds a
		// permission problem before the command has done anything.
		if err := s.probe(s.launched.Pid); err != nil {
			s.launched.Abort()
			s.launchGone, s.aborted = true, true
			return err
		}
		s.startWorkers()
		pid, held, err := s.startLaunched()
		if err != nil || s.launchGone {
			return err
		}
		s.addProcess(pid, 0, true)
		if held {
			s.letGo(pid)
			s.workers[s.heldOwner].wake() // to look at it now it runs
		}
	} else {
		for _, pid := range s.opts.Pids {
			if err := s.probe(pid); err != nil {
				return err
			}
		}
		// Threads alone, grouped by process.
		only := map[int]map[int]bool{}
		var onlyOrder []int
		for _, tid := range s.opts.Tids {
			pid, _, _, ok := proc.TaskInfo(tid)
			if !ok {
				return fmt.Errorf("thread %d: %w", tid, attach.ErrNoSuchProcess)
			}
			if only[pid] == nil {
				only[pid] = map[int]bool{}
				onlyOrder = append(onlyOrder, pid)
			}
			only[pid][tid] = true
		}
		for _, pid := range onlyOrder {
			if err := s.probeTasks(pid, slices.Sorted(maps.Keys(only[pid]))); err != nil {
				return err
			}
		}
		s.startWorkers()
		for _, pid := range s.opts.Pids {
			if s.procs[pid] == nil {
				s.addProcess(pid, 0, false)
			}
		}
		for _, pid := range onlyOrder {
			s.addProcessThreads(pid, only[pid])
		}
	}

	s.setup = time.Since(s.started)
	// The targets' threads are with the stoppers: they sample while the
	// interpreters, if any, are looked for (later processes' at their
	// first sample, see deliverEntry).
	for _, pid := range s.order {
		s.findInterp(pid)
	}
	if s.opts.Control != nil {
		s.opts.Control.Started()
	}

	// The coordinator keeps up with the targets (it finds new threads and
	// exits, and turns what the stoppers saw into events) every
	// ptCoordPeriod, or at the interval if that is longer: it does not
	// sample, and waking more often cost gprof a fifth more CPU.
	period := max(s.interval, ptCoordPeriod)
	lastSlow := time.Now()
	timer := time.NewTimer(period)
	defer timer.Stop()
	urgent := false
	for s.ctx.Err() == nil {
		s.applyControl()
		s.deliver()
		now := time.Now()
		slow := now.Sub(lastSlow) >= ptSlowPeriod
		if slow {
			lastSlow = now
			s.scanChildren()
		} else {
			s.findChildren()
		}
		for i := 0; i < len(s.order); i++ {
			pr := s.procs[s.order[i]]
			if pr == nil || now.Before(pr.nextScan) && !(urgent && pr.scanCost < nudgeScanMax) {
				continue
			}
			t0, c0 := time.Now(), threadCPU()
			prSlow := t0.Sub(pr.slowAt) >= ptSlowPeriod
			if prSlow {
				pr.slowAt = t0
			}
			if s.scanThreads(pr, prSlow) {
				pr.scanCost = threadCPU() - c0
				pr.nextScan = t0.Add(paced(pr.scanCost))
			}
		}
		urgent = false
		s.checkCold()
		s.order = slices.DeleteFunc(s.order, func(pid int) bool { return s.procs[pid] == nil })
		s.threads = slices.DeleteFunc(s.threads, func(th *shared) bool { return th.closed.Load() })
		if s.finished() {
			return nil
		}
		s.pollPending()
		timer.Reset(period)
		select {
		case <-timer.C:
		case <-s.nudged:
			// A stopper saw a thread count change: every process's
			// threads are listed now, not at their paced time.
			urgent = true
		}
	}
	return nil
}

// nudgeScanMax: only processes whose listing took less are listed at a
// nudge (a few threads: tens of µs); one of thousands of threads, which
// may start and end some all the time, keeps to its paced scans.
const nudgeScanMax = 500 * time.Microsecond

// nudge asks the coordinator to list the targets' threads now: a
// stopper found a process with more (or fewer) threads than it knows.
// The coordinator otherwise looks every ptCoordPeriod, and a new busy
// thread of a 64 ms program ran 8 to 11 ms before its first sample.
func (s *ptSampler) nudge() {
	select {
	case s.nudged <- struct{}{}:
	default:
	}
}

// startWorkers starts a stopper for each online CPU.
func (s *ptSampler) startWorkers() {
	cpus := proc.OnlineCPUs()
	if len(cpus) == 0 {
		cpus = []int{-1}
	}
	s.byCPU = make([]int, slices.Max(cpus)+1)
	for i, cpu := range cpus {
		w := newWorker(s, i, cpu, &s.stop)
		s.workers = append(s.workers, w)
		if cpu >= 0 {
			s.byCPU[cpu] = i
		}
	}
	s.workersDone = make(chan struct{}, len(s.workers))
	s.workersReady.Add(len(s.workers))
	for _, w := range s.workers {
		go func() {
			defer func() { s.workersDone <- struct{}{} }()
			w.run()
		}()
	}
	// Every stopper is on its CPU before a launched command runs (or an
	// attached process's threads are handed out): a thread the command
	// starts on a CPU whose stopper is not there yet runs unsampled.
	// Beside CPU-bound loops that took up to 8 ms; quiet, tens of µs. A
	// stopper still not there after ptReadyLimit is not waited for.
	ready := make(chan struct{})
	go func() { s.workersReady.Wait(); close(ready) }()
	select {
	case <-ready:
	case <-time.After(ptReadyLimit):
	}
}

// ptReadyLimit bounds the wait for the stoppers to start (startWorkers).
const ptReadyLimit = 100 * time.Millisecond

// workerFor returns the index of the stopper of cpu (the first one for a
// CPU that has none).
func (s *ptSampler) workerFor(cpu int) int {
	if cpu >= 0 && cpu < len(s.byCPU) {
		return s.byCPU[cpu]
	}
	return 0
}

// stopWorkers ends the stoppers and takes what they saw last. A stopper
// stuck waiting for a thread that went into an uninterruptible sleep is
// left behind after ptAbandon: it lets the thread go when it wakes.
func (s *ptSampler) stopWorkers() {
	if s.workers == nil || s.stop.Load() {
		return
	}
	s.stop.Store(true)
	deadline := time.After(ptAbandon)
	for range s.workers {
		select {
		case <-s.workersDone:
		case <-deadline:
			s.notice("ptrace: a thread did not stop when interrupted (uninterruptible sleep?); stopped sampling without it")
			s.deliver()
			return
		}
	}
	s.deliver()
	for _, w := range s.workers {
		waitUntraced(w.leftTraced)
		s.stats.add(&w.stats)
		s.priority = w.priority
	}
	s.stats.ticks /= len(s.workers)
	s.stats.catchUp /= len(s.workers)
	s.stats.predicted /= len(s.workers)
	s.stats.woken /= len(s.workers)
	for _, th := range s.threads {
		th.closeFiles()
	}
}

// resultStats is what the profile records of the stoppers: how long a
// stop took (from the interrupt to the stop being seen), how the stoppers
// got ahead of their targets, and the samples of threads that waited for
// their CPU at the tick.
func (s *ptSampler) resultStats() map[string]string {
	st := &s.stats
	us := func(q float64) int64 { return st.latency.quantile(q).Microseconds() }
	return map[string]string{
		"ptrace_stop_us":  fmt.Sprintf("p50<%d p90<%d p99<%d; %v; %d waited for in wait4", us(0.5), us(0.9), us(0.99), st.latency, st.waited),
		"ptrace_stoppers": fmt.Sprintf("%d (%s)", len(s.workers), s.priority),
		"ptrace_samples":  fmt.Sprintf("%d (%d of threads waiting for their CPU; %d stops dropped, taken off it by a system call or fault)", st.samples, st.waiting, st.offCPU),
		"ptrace_setup_ms": fmt.Sprintf("%.1f", float64(s.setup.Microseconds())/1000),
		"ptrace_ticks":    fmt.Sprintf("%d (%d late, %d brought forward for a thread owed a sample, %d to a running thread's due point, %d woken for a thread handed over, %d put off to leave the CPU to others half the time; %d sweeps of idle threads; %d new threads found by a stopper)", st.ticks, st.behind, st.catchUp, st.predicted, st.woken, st.dutyCapped, st.sweeps, st.adopted),
		// Where samples went missing, for a shortfall's diagnosis.
		"ptrace_missed": fmt.Sprintf("%.1f ms of CPU time past the credit cap; %d looks at a due thread that had waited for its CPU since its last stop; %d threads moved to another CPU as let go; %d stops sent to another CPU; %d entries dropped by a full ring",
			float64(st.capped)/1e6, st.idle, st.moved, st.remote, st.dropped),
	}
}

// quietStops sets SA_NOCLDSTOP on SIGCHLD for the recording: without it
// every ptrace stop sends gprof a SIGCHLD (the kernel still wakes wait4).
// Exits still send theirs. It returns what undoes it.
func quietStops() (restore func()) {
	old, ok := getSigaction(unix.SIGCHLD)
	if !ok {
		return func() {}
	}
	quiet := old
	quiet.flags |= saNoCldStop
	if !setSigaction(unix.SIGCHLD, quiet) {
		return func() {}
	}
	return func() { setSigaction(unix.SIGCHLD, old) }
}

// raiseProcs makes sure there is a P (the Go runtime's license to run Go
// code) for each stopper beside what the rest of gprof uses: a stopper
// back from a system call that finds none waits for another thread, on
// another CPU, to hand it one.
func raiseProcs(stoppers int) (restore func()) {
	old := runtime.GOMAXPROCS(0)
	want := runtime.NumCPU() + stoppers + 1
	if old >= want {
		return func() {}
	}
	runtime.GOMAXPROCS(want)
	return func() { runtime.GOMAXPROCS(old) }
}

// finished reports whether there is nothing left to sample.
func (s *ptSampler) finished() bool {
	if s.launched != nil {
		if !s.launchGone && processExited(s.launched.Pid) {
			s.launchGone = true
		}
		if s.launchGone {
			// What the stoppers saw last comes before the exits.
			s.stopWorkers()
			if pr := s.procs[s.launched.Pid]; pr != nil {
				s.processGone(pr)
			}
			return true
		}
		return false
	}
	return len(s.procs) == 0
}

// startLaunched lets the launch helper exec the command and returns the
// command's pid once it has, so that gprof's own helper code is never
// sampled. The helper is seized first, with PTRACE_O_TRACEEXEC: it then
// stops where its exec ends, before the command's first instruction, and
// is held there (held true, s.heldTid) until the caller has handed it to
// the stoppers and lets it go (letGo). Its CPU time counts from that
// instant, as perf's enable_on_exec counts it; found by watching
// /proc after the exec instead, the command ran its first 1 to 5 ms (its
// dynamic loader, and main's start) unsampled, and a 64 ms program got
// its first sample up to 6 ms into its CPU time.
func (s *ptSampler) startLaunched() (pid int, held bool, err error) {
	l := s.launched
	helper, _ := exeID(l.Pid)
	// A set-user-ID program (or one with file capabilities) exec'd by a
	// traced thread runs without its privileges: that one is not held,
	// and is found through /proc as before.
	seized := !l.GainsPrivileges() && ptrace(unix.PTRACE_SEIZE, l.Pid, 0, unix.PTRACE_O_TRACEEXEC) == nil
	if seized {
		s.seized = l.Pid
	}
	if err := l.Release(); err != nil {
		if seized {
			// Still blocked on its gate: stop it to let it go.
			s.release(l.Pid, ptInterrupt(l.Pid))
		}
		return 0, false, err
	}
	// Wait for the exec before Started, which waits for it too: the
	// helper, a Go program, gets signals from its own runtime (SIGURG),
	// and a traced thread stops at each until passed on.
	held = seized && s.waitExec(l.Pid)
	if seized && !held {
		s.seized = 0 // gone: its exit was ours to collect
	}
	if err := l.Started(); err != nil {
		// The helper has exited, reaped.
		s.launchGone, s.aborted = true, true
		return 0, false, err
	}
	if held {
		s.heldTid = l.Pid
		return l.Pid, true, nil
	}
	if seized {
		s.launchGone = true
		return l.Pid, false, nil
	}
	deadline := time.Now().Add(ptExecLimit)
	for {
		// The kernel switches the executable before it lays out the new
		// command line, so exec is over once both have changed.
		if id, ok := exeID(l.Pid); ok && id != helper && len(proc.ReadCmdline(l.Pid)) > 0 {
			return l.Pid, false, nil
		}
		if processExited(l.Pid) {
			// The exec failed (the helper said why on stderr) or the
			// command was over before it could be seen.
			s.launchGone = true
			return l.Pid, false, nil
		}
		if time.Now().After(deadline) {
			// Perhaps the command is gprof itself; sample it anyway.
			return l.Pid, false, nil
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// waitExec waits for the seized command to stop at the end of its exec
// (PTRACE_EVENT_EXEC), passing on the signals that arrive first. It
// reports false if the command ended instead (its exit is then noted).
func (s *ptSampler) waitExec(pid int) bool {
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return false
		case ws.Exited() || ws.Signaled():
			s.reapedThread(pid, ws)
			return false
		case !ws.Stopped():
			continue
		case int(ws)>>16 == unix.PTRACE_EVENT_EXEC:
			return true
		}
		var sig unix.Signal
		if int(ws)>>16 == 0 {
			sig = ws.StopSignal() // a signal-delivery-stop: deliver it
		}
		if ptrace(unix.PTRACE_CONT, pid, 0, uintptr(sig)) != nil {
			return false
		}
	}
}

// letGo lets the launched command, held at the end of its exec, run.
func (s *ptSampler) letGo(pid int) {
	s.heldTid, s.seized = 0, 0
	if ptDetach(pid, 0) != nil {
		s.pending[pid] = true
	}
}

// finishLaunched reaps the launched command and returns its exit code.
func (s *ptSampler) finishLaunched() int {
	l := s.launched
	if s.aborted {
		return -1
	}
	if !s.launchGone {
		// Recording ended before the command: it lives within its
		// recording, so it is asked to end (see proc.Launched.Stop). Nothing is
		// seized any more, so waiting for it cannot consume a ptrace-stop.
		notify := s.opts.Notice
		if notify == nil {
			notify = func(string) {}
		}
		return l.Stop(notify)
	}
	code := l.Wait()
	if s.reaped {
		return s.launchCode
	}
	return code
}

// probe seizes one thread of pid and lets it go again, so that a
// permission problem is reported at once rather than as a silent,
// empty profile.
func (s *ptSampler) probe(pid int) error {
	tids, err := proc.ListTasks(pid)
	if err != nil {
		return fmt.Errorf("pid %d: %w", pid, attach.ErrNoSuchProcess)
	}
	return s.probeTasks(pid, tids)
}

// probeTasks is probe with the threads of pid to try.
func (s *ptSampler) probeTasks(pid int, tids []int) error {
	var denied error
	for _, tid := range tids {
		// A thread in uninterruptible sleep would stop only when it wakes.
		if st, _, _, ok := s.readStat(pid, tid); !ok || st == 'D' {
			continue
		}
		err := ptSeize(tid)
		switch err {
		case nil:
		case unix.ESRCH:
			continue
		case unix.EPERM:
			// Exiting threads and zombies refuse to be seized too; only a
			// live thread's refusal means we are not allowed.
			if st, _, _, ok := s.readStat(pid, tid); ok && st != 'Z' && st != 'X' {
				denied = err
			}
			continue
		default:
			return fmt.Errorf("ptrace pid %d: %w", pid, err)
		}
		s.seized = tid
		s.release(tid, ptInterrupt(tid))
		return nil
	}
	if denied != nil {
		return ptPermissionError(pid, denied)
	}
	return nil
}

// release ends a seize that is not used for a sample.
func (s *ptSampler) release(tid int, interruptErr error) {
	s.seized = 0
	if interruptErr != nil {
		s.pending[tid] = true
		return
	}
	s.waiting.Store(int64(tid))
	r := ptWaitStop(tid)
	s.waiting.Store(0)
	switch r.kind {
	case stopped:
		if ptDetach(tid, r.sig) != nil {
			s.pending[tid] = true
		}
	case stopGone:
		s.reapedThread(tid, r.status)
	default:
		s.pending[tid] = true
	}
}

// reapedThread notes a thread whose exit the sampler collected as its
// tracer. For the launched command's main thread that wait4 also reaped
// the process, so its exit status is known only here.
func (s *ptSampler) reapedThread(tid int, ws unix.WaitStatus) {
	if s.launched == nil || tid != s.launched.Pid {
		return
	}
	switch {
	case ws.Exited():
		s.launchCode, s.reaped, s.launchGone = ws.ExitStatus(), true, true
	case ws.Signaled():
		s.launchCode, s.reaped, s.launchGone = 128+int(ws.Signal()), true, true
	}
}

// pollPending detaches threads the coordinator seized that have stopped
// since.
func (s *ptSampler) pollPending() {
	for tid := range s.pending {
		r := ptPoll(tid)
		switch r.kind {
		case stopped:
			if ptDetach(tid, r.sig) == unix.ESRCH {
				// Killed while stopped; its exit is still ours to collect.
				continue
			}
			delete(s.pending, tid)
		case stopGone:
			s.reapedThread(tid, r.status)
			delete(s.pending, tid)
		case stopBlocked:
			delete(s.pending, tid)
		}
	}
}

// drain detaches what is still pending before the sampler returns.
func (s *ptSampler) drain() {
	deadline := time.Now().Add(ptDrainLimit)
	for len(s.pending) > 0 && time.Now().Before(deadline) {
		s.pollPending()
		if len(s.pending) > 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
}
