//go:build linux

package ptrace

// One tick's work on a process: which threads to stop, stopping each for
// the moment its registers and stack are read, and letting it go.

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
)

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
				s.emit(&attach.Switch{Time: attach.MonotonicNow(), Pid: pr.pid, Tid: tid})
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
		th.asleepAt = attach.MonotonicNow()
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
	s.emit(&attach.Switch{Time: t, Pid: pr.pid, Tid: tid, Out: true, Wchan: wchan})
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
func (s *ptSampler) sampleThread(pr *ptProc, th *ptThread, tid, cpu int, running bool, before ptSched) (sm *attach.Sample, outside bool) {
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
	t := attach.MonotonicNow()
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
	if inSyscall && !s.keepSyscall && !running {
		// Asleep in a system call, and woken by the interrupt: its CPU
		// time was spent before it slept, so the caller keeps it for the
		// thread's next sample.
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
	s.sample = attach.Sample{
		Time:      t,
		Pid:       pr.pid,
		Tid:       tid,
		CPU:       cpu,
		Stack:     s.one[:],
		Regs:      &s.regs,
		StackCopy: stack,
		// Running in a system call when interrupted (it stops on the way
		// out): time in the kernel, shown as perf shows a kernel-mode
		// sample without kernel stacks, on the user stack that made the
		// call. Dropping these left a thread that lives in system calls
		// with few samples, and its CPU time after the last of them lost.
		InKernel: inSyscall && !s.keepSyscall,
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
