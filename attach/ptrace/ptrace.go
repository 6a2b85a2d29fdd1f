//go:build linux

package ptrace

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
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

// The ptrace backend comes after perf: Auto uses it where perf events are
// denied.
func init() {
	attach.Register(attach.Driver{Name: attach.Ptrace, Order: 20, Start: recordPtrace})
}

func recordPtrace(ctx context.Context, opts attach.Options, h attach.Handler) (attach.Result, error) {
	res := attach.Result{ExitCode: -1, Backend: "ptrace", Event: "ptrace-timer"}
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
				s.launched.Signal(unix.SIGTERM)
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
	opts     attach.Options
	h        attach.Handler
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

	launched   *proc.Launched
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
	sample attach.Sample

	regs  attach.Regs
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
	seen    map[procmaps.Key]bool
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

// emit hands e to the handler unless recordPtrace has returned.
func (s *ptSampler) emit(e attach.Event) {
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
			s.launched.Abort()
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
	if err := l.Release(); err != nil {
		return 0, err
	}
	if err := l.Started(); err != nil {
		s.launchGone, s.aborted = true, true
		return 0, err
	}
	deadline := time.Now().Add(ptExecLimit)
	for {
		// The kernel switches the executable before it lays out the new
		// command line, so exec is over once both have changed.
		if id, ok := exeID(l.Pid); ok && id != helper && len(proc.ReadCmdline(l.Pid)) > 0 {
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
