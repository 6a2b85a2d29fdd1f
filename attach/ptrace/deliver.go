//go:build linux

package ptrace

// The coordinator's side of the rings: what the stoppers saw becomes
// events, in time order, with the mappings a sample needs reported first.

import (
	"fmt"
	"os"
	"slices"

	"github.com/gprof-dev/gprof/event"
	"golang.org/x/sys/unix"
)

// deliver takes every entry the stoppers have published, in time order.
// Entries of threads already reported gone are dropped: their exit came
// first.
func (s *ptSampler) deliver() {
	s.batch = s.batch[:0]
	counts := make([]int, len(s.workers))
	for i, w := range s.workers {
		n := len(s.batch)
		s.batch = w.ring.pending(s.batch)
		counts[i] = len(s.batch) - n
	}
	if len(s.batch) == 0 {
		return
	}
	slices.SortStableFunc(s.batch, func(a, b *entry) int {
		switch {
		case a.time < b.time:
			return -1
		case a.time > b.time:
			return 1
		}
		return 0
	})
	remapped := map[int]bool{}
	for _, e := range s.batch {
		s.deliverEntry(e, remapped)
	}
	clear(s.batch)
	for i, w := range s.workers {
		w.ring.consume(counts[i])
	}
}

func (s *ptSampler) deliverEntry(e *entry, remapped map[int]bool) {
	if e.kind == reaped {
		s.reapedThread(e.tid, e.status)
		return
	}
	pr := s.procs[e.pid]
	if pr == nil {
		return
	}
	th := pr.threads[e.tid]
	if th == nil {
		if th = s.registerAdopted(pr, e.tid); th == nil {
			return
		}
	}
	switch e.kind {
	case denied:
		s.refused(pr, e.tid)
		return
	case switchIn:
		s.emit(&event.Switch{Time: e.time, Pid: e.pid, Tid: e.tid})
		return
	}
	// The IP or SP in memory mapped since the last look: report the new
	// mappings before the sample that needs them.
	_, ipKnown := findRange(pr.exec, e.regs.IP)
	_, spKnown := findRange(pr.all, e.regs.SP)
	if (!ipKnown || !spKnown) && !remapped[pr.pid] {
		remapped[pr.pid] = true
		s.noticeExec(pr, e.time)
		s.refreshMaps(pr, e.time)
	}
	if e.kind == onCPU && e.interp == nil {
		// Perhaps an interpreter not found yet, or gone with an exec.
		s.findInterp(e.pid)
	}
	s.one[0] = e.regs.IP
	s.sample = event.Sample{
		Time:      e.time,
		Pid:       e.pid,
		Tid:       e.tid,
		CPU:       e.cpu,
		Stack:     s.one[:],
		Regs:      &e.regs,
		StackCopy: e.stack,
		InKernel:  e.inKernel,
		Interp:    e.interp,
	}
	if e.kind == switchOut {
		s.sample.Switch = true
		s.emit(&s.sample)
		s.emit(&event.Switch{Time: e.asleepAt, Pid: e.pid, Tid: e.tid, Out: true, Wchan: e.wchan})
		return
	}
	// The CPU time since the thread's previous sample. Two stoppers can
	// sample one thread as it moves between their CPUs; should their
	// samples come out of order, the later one carries the time.
	th.rebased(e)
	s.sample.CPUDelta = max(e.run-th.base, 0)
	th.base = max(th.base, e.run)
	s.emit(&s.sample)
}

// refused handles a thread that could not be seized: an exiting thread, a
// thread a debugger traces for the moment, or a child that exec'd a setuid
// program. Only the last is reason to give up on the process.
func (s *ptSampler) refused(pr *ptProc, tid int) {
	st, _, _, ok := s.readStat(pr.pid, tid)
	if ok && st != 'Z' && st != 'X' && tid == pr.pid && tracerPid(pr.pid) == 0 && !pr.denied {
		pr.denied = true
		pr.sh.denied.Store(true)
		s.notice(fmt.Sprintf("not sampling pid %d: %v", pr.pid, ptPermissionError(pr.pid, unix.EPERM)))
	}
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
