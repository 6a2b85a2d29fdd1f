//go:build linux

package attach

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The ptrace backend samples when perf_event_open is denied. Each tick it
// looks at every thread of the targets in /proc and, for the ones that are
// running, seizes the thread, interrupts it, reads its registers and a copy
// of its stack, and detaches again (the py-spy model). Nothing stays traced
// between ticks, so new threads need no ptrace event handling: the next
// /proc scan finds them. A stop holds the thread for some 30µs on an idle
// machine, and up to milliseconds on a loaded one (the thread must get a
// CPU to stop, and again to go on), which is why threads that are not
// running are left alone.

const (
	ptMaxRate     = 1000                   // samples per second per thread
	ptSlowPeriod  = 100 * time.Millisecond // rescan maps, names, children
	ptStopLimit   = 20 * time.Millisecond  // a stop slower than this is late
	ptAbandon     = 2 * time.Second        // wait for a stuck sampler
	ptDrainLimit  = 200 * time.Millisecond // wait for late stops at the end
	ptExecLimit   = 5 * time.Second        // launched helper's exec
	ptOnCPUWait   = 300 * time.Microsecond // a running thread stops well within this
	ptPollStep    = 20 * time.Microsecond  // how often to look for that stop
	ptMaxStack    = 1 << 20
	ptDefaultStak = 16 << 10
)

func recordPtrace(ctx context.Context, opts Options, h Handler) (Result, error) {
	res := Result{ExitCode: -1, Backend: "ptrace", Event: "ptrace-timer"}
	s := &ptSampler{
		ctx:        ctx,
		opts:       opts,
		h:          h,
		self:       os.Getpid(),
		procs:      map[int]*ptProc{},
		pending:    map[int]bool{},
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
	// A thread that slept through the tick but ran for at least this long
	// since the previous one is sampled too, so that short bursts of work
	// are not missed just because the thread is asleep at every tick.
	s.minRun = int64(s.interval / 20)
	s.stackSize = opts.StackSize
	if s.stackSize <= 0 {
		s.stackSize = ptDefaultStak
	}
	s.stackSize = min(s.stackSize, ptMaxStack)
	s.stack = make([]byte, s.stackSize)
	if opts.Kernel {
		s.notice("the ptrace backend records no kernel frames")
	}

	if len(opts.Command) > 0 {
		l, err := launch(opts)
		if err != nil {
			return res, err
		}
		s.launched = l
	} else {
		for _, pid := range opts.Pids {
			if pid == s.self {
				return res, fmt.Errorf("pid %d is gprof itself", pid)
			}
			if !processExists(pid) {
				return res, fmt.Errorf("pid %d: %w", pid, ErrNoSuchProcess)
			}
		}
	}

	// All ptrace requests must come from the thread that seized the tracee,
	// so the sampler runs on a goroutine of its own, locked to its thread.
	// If a tracee could not be detached, the goroutine exits still locked:
	// the runtime then ends the thread, and the kernel detaches whatever it
	// still traces and lets it run.
	var err error
	var samplerTid int
	var traced bool // the sampler's thread ends still tracing threads
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		samplerTid = unix.Gettid()
		// The sampler sleeps on this thread (see sleepUntil); with the
		// default 50µs timer slack its ticks would drift toward other
		// timers, the kernel's tick among them.
		unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		restore := ptPrioritize()
		err = s.run()
		if len(s.pending) == 0 && s.seized == 0 {
			restore()
			unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0) // back to the default
			runtime.UnlockOSThread()
		} else {
			traced = true
		}
	}()
	select {
	case <-done:
		if traced {
			// A thread interrupted while it waited for a CPU, and still
			// waiting at the end, is let go by the kernel when the
			// sampler's thread ends, soon after its goroutine; wait for
			// that, so that the targets are free when recording returns.
			waitThreadGone(samplerTid, time.Second)
		}
	case <-ctx.Done():
		select {
		case <-done:
		case <-time.After(ptAbandon):
			// The sampler is stuck waiting for a thread that went into an
			// uninterruptible sleep as it was interrupted. Stop waiting for
			// it: it will detach and finish when the thread wakes (or the
			// kernel detaches when gprof exits), but it must no longer call
			// the handler.
			s.mu.Lock()
			s.abandoned = true
			s.mu.Unlock()
			tid := s.waiting.Load()
			if opts.Notice != nil {
				opts.Notice(fmt.Sprintf("ptrace: thread %d did not stop when interrupted (uninterruptible sleep?); stopped sampling without it", tid))
			}
			if s.launched != nil {
				// Not waited for: the sampler may still trace one of its
				// threads, and a wait could take that thread's stop.
				s.launched.cmd.Process.Signal(unix.SIGTERM)
			}
			return res, nil
		}
	}
	if ptStatsHook != nil {
		ptStatsHook(s.stats)
	}

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

// ptSampler is the state of one recording. Only the sampler goroutine
// touches it while it runs.
type ptSampler struct {
	ctx      context.Context
	opts     Options
	h        Handler
	interval time.Duration

	// mu guards abandoned. waiting is the thread the sampler waits for,
	// for recordPtrace to name if it gives up on the sampler.
	mu        sync.Mutex
	abandoned bool
	waiting   atomic.Int64

	minRun    int64
	stackSize int
	self      int

	procs map[int]*ptProc
	order []int // pids in order of discovery, for a stable sampling order

	launched   *launched
	launchGone bool // the launched process exited
	launchCode int  // its exit code, if the sampler's own wait4 reaped it
	reaped     bool
	aborted    bool // the command never ran

	// pending holds the tids that were seized but did
	// not stop in time; they are detached as soon as they stop. seized is
	// the tid being sampled right now.
	pending map[int]bool
	// released holds, for threads let go by pollPending, their count of
	// times put on a CPU as of that stop, for sampleProcess to take over.
	released map[int]int64
	seized   int

	// sample is handed to the handler for every sample, which must not
	// keep it (see Handler).
	sample Sample

	regs  Regs
	stack []byte
	iov   []unix.RemoteIovec
	buf   []byte
	path  []byte
	one   [1]uint64

	stats       ptStats
	noticed     map[string]bool
	ticks       int
	ticksSince  time.Time
	woke        time.Time // when the current tick began
	slowChecked bool

	// keepSyscall keeps a sample taken in a system call (switchOut).
	keepSyscall bool
}

type ptProc struct {
	pid int
	// only, when set, holds the threads sampled alone (-t); the process's
	// other threads and its children are not sampled.
	only    map[int]bool
	threads map[int]*ptThread
	tids    []int
	exec    []ptRange // executable mappings, sorted
	all     []ptRange // every mapping, sorted
	seen    map[ptMapKey]bool
	exe     [2]uint64 // dev, inode of /proc/PID/exe, to notice exec
	mapsAt  int64
	denied  bool // seizing failed with EPERM; left alone
}

type ptThread struct {
	comm string
	// base is the thread's CPU time at its previous sample, or when it was
	// first seen; last is its CPU time at the previous tick.
	base, last int64
	// woke is set when the sampler stopped a sleeping thread: the stop
	// itself costs the thread a little CPU time, which must not count as a
	// reason to stop it again at the next tick.
	woke bool
	// off is set, with Options.OffCPU, while the thread sleeps and its
	// blocking stack was reported (see sampleProcess).
	off bool
	// asleepAt is when the thread was first found asleep, while its
	// stack is yet to be taken; 0 otherwise.
	asleepAt int64
	// switches is the thread's count of times it was put on a CPU, as read
	// during its last stop, or -1. While it has not changed, the thread has
	// not run since that stop, so it is exactly where it was then.
	switches int64
}

// ptStats count what the sampler did, for tests and diagnostics.
type ptStats struct {
	ticks, samples int
	late           int // interrupted threads slower than ptStopLimit to stop
	denied         int // EPERM from PTRACE_SEIZE
	signals        int // signal-delivery-stops, the signal handed back
	inSyscall      int // stops on the way out of the kernel, dropped
	// Running threads that were not on a CPU when interrupted: idle
	// found them not put on a CPU since their last stop and left them
	// alone; offCPU stopped only once they got one again, and slow had
	// not stopped within ptOnCPUWait. None of them is a sample.
	idle, offCPU, slow int
	// paused is the time from interrupt to detach, summed over samples:
	// roughly how long the target's threads were kept from running.
	paused, maxPause time.Duration
}

type ptRange struct{ start, end uint64 }

// ptMapKey identifies a mapping already reported.
type ptMapKey struct {
	start, end, off, dev, ino uint64
	path                      string
}

// emit hands e to the handler unless recordPtrace has returned.
func (s *ptSampler) emit(e Event) {
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

func (s *ptSampler) run() (err error) {
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
		s.drain()
	}()

	if s.launched != nil {
		// Probing the helper, still blocked before its exec, finds a
		// permission problem before the command has done anything.
		if err := s.probe(s.launched.Pid); err != nil {
			s.launched.abort()
			s.launchGone, s.aborted = true, true
			return err
		}
		pid, err := s.startLaunched()
		if err != nil || s.launchGone {
			return err
		}
		s.addProcess(pid, 0, true)
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
			pid, _, _, ok := taskInfo(tid)
			if !ok {
				return fmt.Errorf("thread %d: %w", tid, ErrNoSuchProcess)
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
		for _, pid := range s.opts.Pids {
			if s.procs[pid] == nil {
				s.addProcess(pid, 0, false)
			}
		}
		for _, pid := range onlyOrder {
			s.addProcessThreads(pid, only[pid])
		}
	}

	next := time.Now()
	lastSlow := next
	s.ticksSince = next
	for {
		if s.ctx.Err() != nil {
			return nil
		}
		now := time.Now()
		s.woke = now
		slow := now.Sub(lastSlow) >= ptSlowPeriod
		if slow {
			lastSlow = now
		}
		s.tick(slow)
		if s.finished() {
			return nil
		}
		next = next.Add(jitter(s.interval))
		if time.Until(next) > 0 {
			s.sleepUntil(next)
		} else {
			// Sampling took longer than the interval: skip the ticks that
			// were missed instead of running them back to back.
			next = time.Now()
		}
	}
}

// ptPrioritize puts the calling thread, the sampler's, ahead of the
// threads it samples when it may (CAP_SYS_NICE): SCHED_FIFO, else nice
// -20. It returns what undoes that. A sampler with no more priority than
// its targets gets a CPU on a busy machine mostly at timer ticks, when the
// running thread's time slice is up, so its samples bunch at ticks; a
// real-time one runs as its own timer fires. It sleeps through most of
// each tick, so it takes little from others.
func ptPrioritize() (restore func()) {
	old, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return func() {}
	}
	const resetOnFork = 1 // SCHED_FLAG_RESET_ON_FORK
	fifo := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1, Flags: resetOnFork}
	nice := unix.SchedAttr{Policy: old.Policy, Nice: -20, Flags: resetOnFork}
	if unix.SchedSetAttr(0, &fifo, 0) != nil && unix.SchedSetAttr(0, &nice, 0) != nil {
		return func() {}
	}
	return func() { unix.SchedSetAttr(0, old, 0) }
}

// sleepUntil sleeps until t, or until the recording is cancelled. It
// sleeps on the sampler's own thread: the Go runtime's timers wake at
// whole milliseconds, which would round a 1 ms tick jittered between 0.5
// and 1.5 ms to 1 or 2 ms. Threads interrupted but not yet stopped are
// released as soon as they stop, so that they lose no more of their turn
// on a CPU than they must.
func (s *ptSampler) sleepUntil(t time.Time) {
	for s.ctx.Err() == nil {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		step := 10 * time.Millisecond // to notice cancellation
		if len(s.pending) > 0 {
			s.pollPending()
			step = 10 * ptPollStep
		}
		ts := unix.NsecToTimespec(int64(min(d, step)))
		unix.Nanosleep(&ts, nil)
	}
}

// jitter returns a tick length drawn uniformly from 0.5 to 1.5 times d. A
// fixed wall-clock tick can lock in phase with a target's own loop and
// sample some of its functions more than their share (seen as 55/26/19
// for a 50/30/20 split); random ticks with the same mean cannot.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d)
}

// finished reports whether there is nothing left to sample.
func (s *ptSampler) finished() bool {
	if s.launched != nil {
		if !s.launchGone && len(s.pending) == 0 && processExited(s.launched.Pid) {
			s.launchGone = true
		}
		if s.launchGone {
			if pr := s.procs[s.launched.Pid]; pr != nil {
				s.processGone(pr)
			}
			return true
		}
		return false
	}
	return len(s.procs) == 0
}

// startLaunched lets the launch helper exec the command and waits until
// it has, so that gprof's own helper code is never sampled.
func (s *ptSampler) startLaunched() (int, error) {
	l := s.launched
	helper, _ := exeID(l.Pid)
	if err := l.release(); err != nil {
		return 0, err
	}
	if err := l.started(); err != nil {
		s.launchGone, s.aborted = true, true
		return 0, err
	}
	deadline := time.Now().Add(ptExecLimit)
	for {
		// The kernel switches the executable before it lays out the new
		// command line, so exec is over once both have changed.
		if id, ok := exeID(l.Pid); ok && id != helper && len(readCmdline(l.Pid)) > 0 {
			return l.Pid, nil
		}
		if processExited(l.Pid) {
			// The exec failed (the helper said why on stderr) or the
			// command was over before it could be seen.
			s.launchGone = true
			return l.Pid, nil
		}
		if time.Now().After(deadline) {
			// Perhaps the command is gprof itself; sample it anyway.
			return l.Pid, nil
		}
		time.Sleep(50 * time.Microsecond)
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
		// recording, so it is asked to end (see launched.stop). Nothing is
		// seized any more, so waiting for it cannot consume a ptrace-stop.
		notify := s.opts.Notice
		if notify == nil {
			notify = func(string) {}
		}
		return l.stop(notify)
	}
	code := l.wait()
	if s.reaped {
		return s.launchCode
	}
	return code
}

// probe seizes one thread of pid and lets it go again, so that a
// permission problem is reported at once rather than as a silent,
// empty profile.
func (s *ptSampler) probe(pid int) error {
	tids, err := listTasks(pid)
	if err != nil {
		return fmt.Errorf("pid %d: %w", pid, ErrNoSuchProcess)
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
		s.reapedThread(tid, r)
	default:
		s.pending[tid] = true
	}
}

// reapedThread notes a thread whose exit the sampler collected as its
// tracer. For the launched command's main thread that wait4 also reaped
// the process, so its exit status is known only here.
func (s *ptSampler) reapedThread(tid int, r stopResult) {
	if s.launched == nil || tid != s.launched.Pid {
		return
	}
	ws := r.status
	switch {
	case ws.Exited():
		s.launchCode, s.reaped, s.launchGone = ws.ExitStatus(), true, true
	case ws.Signaled():
		s.launchCode, s.reaped, s.launchGone = 128+int(ws.Signal()), true, true
	}
}

// pollPending detaches seized threads that have stopped since.
func (s *ptSampler) pollPending() {
	for tid := range s.pending {
		r := ptPoll(tid)
		switch r.kind {
		case stopped:
			// Most of these were waiting for a CPU when interrupted, and
			// have had one only to stop; they must not be interrupted
			// again until they have been on a CPU since (see sampleThread).
			st, ok := s.readSchedstat(tid, tid)
			if ptDetach(tid, r.sig) == unix.ESRCH {
				// Killed while stopped; its exit is still ours to collect.
				continue
			}
			delete(s.pending, tid)
			if ok {
				if s.released == nil {
					s.released = map[int]int64{}
				}
				s.released[tid] = st.switches
			}
		case stopGone:
			s.reapedThread(tid, r)
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

func (s *ptSampler) tick(slow bool) {
	s.pollPending()
	if slow {
		s.scanChildren()
	}
	for i := 0; i < len(s.order); i++ {
		pr := s.procs[s.order[i]]
		if pr == nil {
			continue
		}
		if !s.scanThreads(pr, slow) {
			continue
		}
		if !pr.denied {
			s.sampleProcess(pr)
		}
	}
	s.order = slices.DeleteFunc(s.order, func(pid int) bool { return s.procs[pid] == nil })
	s.checkRate()
}

// checkRate tells the user once when sampling cannot keep up with the
// requested interval, because then the profile has fewer samples than its
// header suggests.
func (s *ptSampler) checkRate() {
	s.ticks++
	s.stats.ticks++
	el := time.Since(s.ticksSince)
	if el < 2*time.Second {
		return
	}
	want := float64(el) / float64(s.interval)
	if !s.slowChecked && float64(s.ticks) < want/2 {
		s.slowChecked = true
		s.notice(fmt.Sprintf("ptrace sampling cannot keep up with a %v interval; it managed about %.0f samples a second per thread", s.interval, float64(s.ticks)/el.Seconds()))
	}
	s.ticks, s.ticksSince = 0, time.Now()
}

// addProcess starts tracking pid (a child of ppid when ppid is nonzero) and
// reports what it has: its threads, names and mappings.
func (s *ptSampler) addProcess(pid, ppid int, launched bool) {
	s.addProc(pid, ppid, launched, nil)
}

// addProcessThreads starts tracking the threads only of pid, alone.
func (s *ptSampler) addProcessThreads(pid int, only map[int]bool) {
	s.addProc(pid, 0, false, only)
}

func (s *ptSampler) addProc(pid, ppid int, launched bool, only map[int]bool) {
	now := MonotonicNow()
	pr := &ptProc{pid: pid, only: only, threads: map[int]*ptThread{}, seen: map[ptMapKey]bool{}}
	pr.exe, _ = exeID(pid)
	s.procs[pid] = pr
	s.order = append(s.order, pid)
	if ppid != 0 {
		s.emit(&Fork{Time: now, Pid: pid, Tid: pid, Ppid: ppid, Ptid: ppid})
	}
	s.refreshMaps(pr, now)
	tids, err := listTasks(pid)
	if err != nil {
		return
	}
	tids = pr.filter(tids)
	argv := readCmdline(pid)
	// A forked child is named as perf names it: a copy of its parent (the
	// Fork above), then by its own name, which it may have changed, not
	// by the command line it shares with its parent. Only a child that
	// runs another program already is reported as an exec, with its new
	// command line (and without the parent's mappings).
	execd := launched
	if parent := s.procs[ppid]; ppid != 0 && parent != nil {
		if pr.exe == parent.exe {
			argv = nil
		} else {
			execd = true
		}
	}
	for _, tid := range tids {
		th := s.newThread(pid, tid)
		pr.threads[tid] = th
		c := &Comm{Time: now, Pid: pid, Tid: tid, Name: th.comm}
		if tid == pid || only != nil {
			c.Argv, c.Exec = argv, execd
		}
		s.emit(c)
	}
	pr.tids = tids
}

// filter drops from tids the threads that are not sampled, in place.
func (pr *ptProc) filter(tids []int) []int {
	if pr.only == nil {
		return tids
	}
	return slices.DeleteFunc(tids, func(tid int) bool { return !pr.only[tid] })
}

func (s *ptSampler) newThread(pid, tid int) *ptThread {
	th := &ptThread{comm: readTaskComm(pid, tid), switches: -1}
	st, _ := s.readSchedstat(pid, tid)
	th.last = st.run
	th.base = th.last
	return th
}

// processGone reports the exit of all of pr's threads, the main one last.
func (s *ptSampler) processGone(pr *ptProc) {
	now := MonotonicNow()
	for _, tid := range pr.tids {
		if tid != pr.pid {
			s.emit(&Exit{Time: now, Pid: pr.pid, Tid: tid})
		}
	}
	s.emit(&Exit{Time: now, Pid: pr.pid, Tid: pr.pid})
	delete(s.procs, pr.pid)
}

// scanThreads reconciles pr's threads with /proc and reports false when
// the process is gone.
func (s *ptSampler) scanThreads(pr *ptProc, slow bool) bool {
	tids, err := listTasks(pr.pid)
	if err != nil || len(tids) == 0 || s.zombie(pr.pid, tids) {
		s.processGone(pr)
		return false
	}
	if pr.only != nil {
		if tids = pr.filter(tids); len(tids) == 0 {
			// The threads sampled alone are gone; the process may not be.
			now := MonotonicNow()
			for _, tid := range pr.tids {
				s.emit(&Exit{Time: now, Pid: pr.pid, Tid: tid})
			}
			delete(s.procs, pr.pid)
			return false
		}
	}
	now := MonotonicNow()
	for _, tid := range pr.tids {
		if _, found := slices.BinarySearch(tids, tid); !found {
			s.emit(&Exit{Time: now, Pid: pr.pid, Tid: tid})
			delete(pr.threads, tid)
		}
	}
	for _, tid := range tids {
		if pr.threads[tid] != nil {
			continue
		}
		// A new thread may be the first sign of an exec: the thread
		// belongs to the new program, so the exec is reported first.
		s.noticeExec(pr, now)
		th := s.newThread(pr.pid, tid)
		pr.threads[tid] = th
		s.emit(&Fork{Time: now, Pid: pr.pid, Tid: tid, Ppid: pr.pid, Ptid: pr.pid})
		s.emit(&Comm{Time: now, Pid: pr.pid, Tid: tid, Name: th.comm})
	}
	pr.tids = append(pr.tids[:0], tids...)
	if !slow {
		return true
	}

	s.noticeExec(pr, now)
	for _, tid := range tids {
		th := pr.threads[tid]
		if c := readTaskComm(pr.pid, tid); c != "" && c != th.comm {
			th.comm = c
			s.emit(&Comm{Time: now, Pid: pr.pid, Tid: tid, Name: c})
		}
	}
	if now-pr.mapsAt >= int64(ptSlowPeriod) {
		s.refreshMaps(pr, now)
	}
	return true
}

// noticeExec reports an exec of pr that happened since the last look:
// its old mappings are gone and its main thread has a new name and
// command line. It is checked every slow tick, and also as soon as a new
// thread or a sample outside the known mappings hints at an exec, so that
// nothing of the new program is attributed to the old one.
func (s *ptSampler) noticeExec(pr *ptProc, now int64) {
	id, ok := exeID(pr.pid)
	if !ok || id == pr.exe {
		return
	}
	pr.exe = id
	pr.exec, pr.all, pr.seen = nil, nil, map[ptMapKey]bool{}
	pr.mapsAt = 0
	if th := pr.threads[pr.pid]; th != nil {
		th.comm = readTaskComm(pr.pid, pr.pid)
		s.emit(&Comm{Time: now, Pid: pr.pid, Tid: pr.pid, Name: th.comm, Exec: true, Argv: readCmdline(pr.pid)})
	}
}

// zombie reports whether a process has exited but not been reaped: only
// its main thread is left, as a zombie. Attached targets may stay like
// that for as long as their parent neglects them.
func (s *ptSampler) zombie(pid int, tids []int) bool {
	if len(tids) != 1 || tids[0] != pid {
		return false
	}
	st, _, _, ok := s.readStat(pid, pid)
	return !ok || st == 'Z' || st == 'X'
}

// scanChildren starts tracking processes whose parent is a target.
func (s *ptSampler) scanChildren() {
	f, err := os.Open("/proc")
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	type cand struct{ pid, ppid int }
	var cands []cand
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || s.procs[pid] != nil || pid == s.self {
			continue
		}
		if _, ppid, _, ok := s.readStat(pid, pid); ok && ppid > 1 {
			cands = append(cands, cand{pid, ppid})
		}
	}
	// A child's own children are found in the same scan, parents first.
	sort.Slice(cands, func(i, j int) bool { return cands[i].pid < cands[j].pid })
	for added := true; added; {
		added = false
		for i, c := range cands {
			if c.pid != 0 && s.procs[c.ppid] != nil && s.procs[c.ppid].only == nil {
				s.addProcess(c.pid, c.ppid, false)
				cands[i].pid = 0
				added = true
			}
		}
	}
}

func (s *ptSampler) sampleProcess(pr *ptProc) {
	remapped := false
	for _, tid := range pr.tids {
		th := pr.threads[tid]
		st, _, cpu, ok := s.readStat(pr.pid, tid)
		if !ok || st == 'Z' || st == 'X' {
			continue
		}
		sched, ok := s.readSchedstat(pr.pid, tid)
		if !ok {
			continue
		}
		run := sched.run
		ran := run - th.last
		th.last = run
		if s.pending[tid] {
			// Still seized from an earlier tick and not yet stopped.
			continue
		}
		if n, ok := s.released[tid]; ok {
			th.switches = n
			delete(s.released, tid)
		}
		running := st == 'R'
		if (th.off || th.asleepAt != 0) && (running || ran >= s.minRun && !th.woke) {
			if th.off {
				s.emit(&Switch{Time: MonotonicNow(), Pid: pr.pid, Tid: tid})
			}
			th.off, th.asleepAt = false, 0
		}
		if !running {
			if th.woke || ran < s.minRun {
				th.woke = false
				if s.opts.OffCPU && !th.off {
					s.switchOut(pr, th, tid, cpu, sched)
				}
				continue
			}
		} else if sched.switches == th.switches {
			// Runnable, but waiting for a CPU ever since its last stop.
			s.stats.idle++
			continue
		}
		th.woke = false
		sm, outside := s.sampleThread(pr, th, tid, cpu, running, sched)
		if sm == nil {
			if pr.denied {
				return
			}
			continue
		}
		th.woke = !running
		sm.CPUDelta = th.last - th.base
		th.base = th.last
		if outside && !remapped {
			// The IP or SP is in memory mapped since the last look;
			// report the new mappings before the sample that needs them.
			remapped = true
			s.noticeExec(pr, sm.Time)
			s.refreshMaps(pr, sm.Time)
		}
		s.emit(sm)
	}
}

// switchOut reports, with Options.OffCPU, that a thread found asleep went
// off the CPU, with the stack it sleeps in: one stop per sleep, as the
// Gecko sampler records a sleeping thread's stack once and repeats it
// until the thread runs again (the builder samples the stretch).
func (s *ptSampler) switchOut(pr *ptProc, th *ptThread, tid, cpu int, sched ptSched) {
	// Asleep, it stops in its system call: that is the stack wanted.
	s.keepSyscall = true
	if th.asleepAt == 0 {
		th.asleepAt = MonotonicNow()
	}
	wchan := readWchan(pr.pid, tid)
	sm, outside := s.sampleThread(pr, th, tid, cpu, false, sched)
	s.keepSyscall = false
	if sm == nil {
		return // tried again next tick; the wait counts from asleepAt
	}
	sm.Switch, sm.CPUDelta = true, 0
	t := th.asleepAt
	if outside {
		s.noticeExec(pr, sm.Time)
		s.refreshMaps(pr, sm.Time)
	}
	s.emit(sm)
	s.emit(&Switch{Time: t, Pid: pr.pid, Tid: tid, Out: true, Wchan: wchan})
	th.off, th.asleepAt = true, 0
	th.woke = true // the stop cost it a little CPU time
}

// readWchan returns the kernel function tid sleeps in, or "" ("0" when the
// kernel hides it).
func readWchan(pid, tid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/wchan", pid, tid))
	if err != nil || len(b) == 0 || string(b) == "0" {
		return ""
	}
	return string(b)
}

// sampleThread stops tid, takes its registers and stack, and lets it go.
// outside reports that the IP or SP was not in a known mapping.
//
// A sample must show where a thread is at a moment that has nothing to do
// with what it runs, like perf's, which interrupts the thread after each
// period of its own CPU time. A thread that is on a CPU when interrupted
// stops within microseconds, at such a moment; so does one that the
// sampler's own wake-up just took off its CPU. A runnable thread that has
// been waiting for a CPU since before the tick stops only once it gets
// one, back where it was last taken off, and that is no such moment: on
// a loaded machine threads are taken off at timer ticks and at the exit of
// the system call in which the scheduler noticed that their time slice
// was up, so these stops bunch on the code around system calls and on
// where the thread happened to be at ticks (a 50/30/20 split read as
// 55.6/26.7/17.8 this way). So for a running thread (on a CPU or waiting for
// one) the sample is kept only if, between the look at its schedstat
// (before) and its stop, it was not put on a CPU, or put on one just once
// after waiting no longer than the sampler has been awake. If it does not
// stop within ptOnCPUWait it is left to stop on its own, and let go then.
func (s *ptSampler) sampleThread(pr *ptProc, th *ptThread, tid, cpu int, running bool, before ptSched) (sm *Sample, outside bool) {
	switch err := ptSeize(tid); err {
	case nil:
	case unix.ESRCH:
		return nil, false
	case unix.EPERM:
		// An exiting thread, a thread a debugger traces for the moment,
		// or a child that exec'd a setuid program: only the last is
		// reason to give up on the process.
		st, _, _, ok := s.readStat(pr.pid, tid)
		if ok && st != 'Z' && st != 'X' && tid == pr.pid && tracerPid(pr.pid) == 0 {
			pr.denied = true
			s.notice(fmt.Sprintf("not sampling pid %d: %v", pr.pid, ptPermissionError(pr.pid, err)))
		}
		s.stats.denied++
		return nil, false
	default:
		return nil, false
	}
	s.seized = tid
	t0 := time.Now()
	if err := ptInterrupt(tid); err != nil {
		s.seized = 0
		s.pending[tid] = true
		return nil, false
	}
	var r stopResult
	if running {
		r = s.waitOnCPU(tid, t0)
		if r.kind == stopNone {
			s.seized = 0
			s.pending[tid] = true
			s.stats.slow++
			return nil, false
		}
	} else {
		s.waiting.Store(int64(tid))
		r = ptWaitStop(tid)
		s.waiting.Store(0)
	}
	if time.Since(t0) > ptStopLimit {
		s.stats.late++
	}
	if r.kind != stopped {
		s.seized = 0
		if r.kind == stopGone {
			s.reapedThread(tid, r)
		} else {
			s.pending[tid] = true
		}
		return nil, false
	}
	inSyscall, err := ptGetRegs(tid, &s.regs)
	t := MonotonicNow()
	// While the thread is stopped its CPU time is exact: /proc reads of
	// a thread on a CPU are only as fresh as the last timer tick.
	onCPU := true
	if now, ok := s.readSchedstat(pr.pid, tid); ok {
		th.last, th.switches = now.run, now.switches
		onCPU = !running || now.switches == before.switches ||
			now.switches == before.switches+1 && time.Duration(now.delay-before.delay) <= time.Since(s.woke)+ptPollStep
	}
	var stack []byte
	if err == nil && onCPU {
		end, ok := findRange(pr.all, s.regs.SP)
		outside = !ok
		stack, s.iov = readStack(pr.pid, s.regs.SP, end, s.stack, s.iov)
	}
	if ptDetach(tid, r.sig) != nil {
		s.pending[tid] = true
	}
	s.seized = 0
	held := time.Since(t0)
	s.stats.paused += held
	s.stats.maxPause = max(s.stats.maxPause, held)
	if err != nil {
		return nil, false
	}
	if !onCPU && !s.keepSyscall {
		// Stopped where it was last taken off a CPU; the caller keeps its
		// CPU time for its next sample.
		s.stats.offCPU++
		return nil, false
	}
	if inSyscall && !s.keepSyscall {
		// The thread stopped on its way out of the kernel, where a
		// thread that was waiting for a CPU or in a system call stops.
		// Keeping such samples would pile them on the few syscall sites
		// of a busy loop; perf samples user mode only, so drop them. The
		// caller keeps the CPU time for the thread's next sample.
		s.stats.inSyscall++
		return nil, false
	}
	if _, ok := findRange(pr.exec, s.regs.IP); !ok {
		outside = true
	}
	if r.sig != 0 {
		s.stats.signals++
	}
	s.one[0] = s.regs.IP
	s.stats.samples++
	s.sample = Sample{
		Time:      t,
		Pid:       pr.pid,
		Tid:       tid,
		CPU:       cpu,
		Stack:     s.one[:],
		Regs:      &s.regs,
		StackCopy: stack,
	}
	return &s.sample, outside
}

// waitOnCPU waits up to ptOnCPUWait for tid, just interrupted, to stop,
// and returns stopNone if it has not. It polls rather than blocks: a
// thread waiting for a CPU may take many milliseconds to stop, and the
// sampler must not wait for it.
func (s *ptSampler) waitOnCPU(tid int, t0 time.Time) stopResult {
	for {
		r := ptPoll(tid)
		if r.kind != stopNone || time.Since(t0) > ptOnCPUWait {
			return r
		}
		ts := unix.NsecToTimespec(int64(ptPollStep))
		unix.Nanosleep(&ts, nil)
	}
}

// refreshMaps rereads pr's mappings and reports executable ones not
// reported before.
func (s *ptSampler) refreshMaps(pr *ptProc, now int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pr.pid))
	if err != nil {
		return
	}
	pr.mapsAt = now
	pr.exec, pr.all = pr.exec[:0], pr.all[:0]
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		r, ok := parseRange(line)
		if !ok {
			continue
		}
		pr.all = append(pr.all, r)
		m := parseMapsLine(string(line), pr.pid, now)
		if m == nil {
			continue
		}
		pr.exec = append(pr.exec, r)
		key := ptMapKey{m.Start, m.End, m.FileOffset, m.Dev, m.Inode, m.Path}
		if !pr.seen[key] {
			pr.seen[key] = true
			s.emit(m)
		}
	}
}

func parseRange(line []byte) (ptRange, bool) {
	var r ptRange
	i := 0
	for ; i < len(line) && line[i] != '-'; i++ {
	}
	j := i + 1
	for ; j < len(line) && line[j] != ' '; j++ {
	}
	if i >= len(line) || j > len(line) {
		return r, false
	}
	var err1, err2 error
	r.start, err1 = strconv.ParseUint(string(line[:i]), 16, 64)
	r.end, err2 = strconv.ParseUint(string(line[i+1:j]), 16, 64)
	return r, err1 == nil && err2 == nil && r.end > r.start
}

// findRange returns the end of the range in sorted rs that holds a.
func findRange(rs []ptRange, a uint64) (end uint64, ok bool) {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].end > a })
	if i < len(rs) && rs[i].start <= a {
		return rs[i].end, true
	}
	return 0, false
}

// taskPath returns /proc/PID/task/TID/NAME.
func (s *ptSampler) taskPath(pid, tid int, name string) string {
	b := append(s.path[:0], "/proc/"...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, "/task/"...)
	b = strconv.AppendInt(b, int64(tid), 10)
	b = append(b, '/')
	b = append(b, name...)
	s.path = b
	return string(b)
}

// readFile reads a small /proc file into the sampler's buffer; /proc files
// are read every tick for every thread, so this avoids os.File's overhead.
func (s *ptSampler) readFile(path string) ([]byte, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	n, err := unix.Read(fd, s.buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return nil, false
	}
	return s.buf[:n], true
}

// readStat returns a thread's state letter, parent pid and last CPU from
// /proc/PID/task/TID/stat.
func (s *ptSampler) readStat(pid, tid int) (state byte, ppid, cpu int, ok bool) {
	data, ok := s.readFile(s.taskPath(pid, tid, "stat"))
	if !ok {
		return 0, 0, 0, false
	}
	return parseStat(data)
}

// parseStat picks fields out of a stat line. The command name in
// parentheses may hold spaces and parentheses, so fields are counted from
// the last ')'. The state is field 3, the parent pid 4, the CPU 39.
func parseStat(data []byte) (state byte, ppid, cpu int, ok bool) {
	i := len(data) - 1
	for ; i >= 0 && data[i] != ')'; i-- {
	}
	if i < 0 || i+2 >= len(data) {
		return 0, 0, 0, false
	}
	state = data[i+2]
	field := 3
	cpu = -1
	for p := i + 3; p < len(data) && field < 39; {
		for p < len(data) && data[p] == ' ' {
			p++
		}
		field++
		q := p
		for q < len(data) && data[q] != ' ' && data[q] != '\n' {
			q++
		}
		switch field {
		case 4:
			ppid, _ = strconv.Atoi(string(data[p:q]))
		case 39:
			cpu, _ = strconv.Atoi(string(data[p:q]))
		}
		p = q
	}
	return state, ppid, cpu, true
}

// ptSched is a thread's /proc/PID/task/TID/schedstat: its CPU time, the
// time it spent waiting for a CPU (both in ns, and for a thread on a CPU
// only as of the last timer tick or context switch), and the number of
// times it was put on a CPU. stat's utime and stime count whole clock
// ticks, too coarse to divide among samples.
type ptSched struct{ run, delay, switches int64 }

// readSchedstat reads a thread's schedstat; any thread's tid will do as
// pid.
func (s *ptSampler) readSchedstat(pid, tid int) (ptSched, bool) {
	data, ok := s.readFile(s.taskPath(pid, tid, "schedstat"))
	if !ok {
		return ptSched{}, false
	}
	var f [3]int64
	i := 0
	for _, c := range data {
		if c >= '0' && c <= '9' {
			f[i] = f[i]*10 + int64(c-'0')
		} else if c == ' ' && i < 2 {
			i++
		} else {
			break
		}
	}
	return ptSched{f[0], f[1], f[2]}, i == 2
}

// exeID identifies the executable a process runs.
func exeID(pid int) ([2]uint64, bool) {
	var st unix.Stat_t
	if unix.Stat(fmt.Sprintf("/proc/%d/exe", pid), &st) != nil {
		return [2]uint64{}, false
	}
	return [2]uint64{st.Dev, st.Ino}, true
}

// ptPermissionError explains why pid cannot be traced.
func ptPermissionError(pid int, err error) error {
	if tracer := tracerPid(pid); tracer != 0 && tracer != os.Getpid() {
		return fmt.Errorf("%w: pid %d is already being traced by pid %d (a debugger?), and a thread can have only one tracer", ErrPermission, pid, tracer)
	}
	const caps = "run gprof as root, or give it the capability with `sudo setcap cap_sys_ptrace+ep $(command -v gprof)`; in a container, start it with --cap-add SYS_PTRACE"
	switch scope, _ := readSysctlInt("yama/ptrace_scope"); scope {
	case 1:
		return fmt.Errorf("%w: cannot trace pid %d (%v): kernel.yama.ptrace_scope is 1, which allows tracing only a process's own descendants; %s, or allow it with `sudo sysctl kernel.yama.ptrace_scope=0`", ErrPermission, pid, err, caps)
	case 2:
		return fmt.Errorf("%w: cannot trace pid %d (%v): kernel.yama.ptrace_scope is 2, which allows tracing only with CAP_SYS_PTRACE; %s", ErrPermission, pid, err, caps)
	case 3:
		return fmt.Errorf("%w: cannot trace pid %d (%v): kernel.yama.ptrace_scope is 3, which disables ptrace until the next reboot", ErrPermission, pid, err)
	}
	return fmt.Errorf("%w: cannot trace pid %d (%v): a process can trace only processes of its own user that are not setuid; %s", ErrPermission, pid, err, caps)
}

// tracerPid returns the TracerPid line of /proc/PID/status, or 0.
func tracerPid(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(data), "\nTracerPid:")
	if !ok {
		return 0
	}
	line, _, _ := strings.Cut(rest, "\n")
	n, _ := strconv.Atoi(strings.TrimSpace(line))
	return n
}
