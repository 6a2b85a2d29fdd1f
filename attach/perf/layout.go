//go:build linux

package perf

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach/internal/proc"
	"github.com/gprof-dev/gprof/perfrecord"
)

// How the events are laid out. perf record -p opens one event per target
// thread and CPU (perThread): exact, as the kernel samples only those
// threads, and any user may do it on their own processes, but it takes
// threads × CPUs files: 20,000 for a 10,000-thread process on 2 CPUs,
// 640,000 on 64. So when that does not fit the file limit, gprof opens one
// event per CPU that samples whatever runs there (perCPU, as perf record
// -a does) and keeps the records of its targets: as many files as CPUs,
// whatever the thread count, and no sample of a target lost (a CPU runs
// one thread at a time, so a CPU's ring holds the same samples either
// way), at the cost of the kernel sampling the other processes on the
// machine too, which gprof decodes only far enough to drop. The kernel
// allows per-CPU events to root, CAP_PERFMON, or everyone at
// kernel.perf_event_paranoid <= 0. Where gprof may also load BPF
// programs, attaching is always perCPU: the kernel then drops the other
// processes' samples (filter.go), and per-CPU events can be paced
// (pace.go), which per-thread ones cannot. A system-wide recording (-a) is
// perCPU with no filter.
type layout int

const (
	perThread layout = iota
	perCPU
)

func (l layout) String() string {
	if l == perCPU {
		return "per-cpu"
	}
	return "per-thread"
}

// forceLayout, when set, overrides the choice (tests).
var forceLayout *layout

// fileReserve is how many files the per-thread layout leaves free for
// everything else gprof opens (binaries, debug files, /proc, the output),
// on top of an eighth of the limit for threads that start while events
// are being opened.
const fileReserve = 256

// fileBudget returns how many more files gprof may open, and its limit.
// (Go raises the soft limit to the hard one at start-up, so the soft limit
// is already as high as it goes without privilege.)
func fileBudget() (free, limit int) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 1 << 30, 0
	}
	limit = int(min(rl.Cur, 1<<30))
	open := 0
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = len(ents)
	}
	return limit - open, limit
}

// chooseLayout picks the layout for attaching to threads threads.
func (s *perfSession) chooseLayout(threads int) (layout, error) {
	if forceLayout != nil {
		return *forceLayout, nil
	}
	if s.filter != nil {
		// Per CPU, where the interval can vary, and the kernel keeps
		// the targets' samples alone (filter.go).
		return perCPU, nil
	}
	need := threads * len(s.cpus) * len(s.events)
	if s.opts.OffCPU {
		need += threads * len(s.cpus)
	}
	if s.opts.Control != nil {
		need += threads * len(s.cpus) // the side-band events (control.go)
	}
	free, limit := fileBudget()
	if need+need/8+fileReserve <= free {
		return perThread, nil
	}
	err := s.tryCPUWide()
	if err == nil {
		return perCPU, nil
	}
	p, _ := proc.ReadSysctlInt("perf_event_paranoid")
	return perThread, fmt.Errorf("attaching to %d threads takes %d files (one per thread and CPU), and gprof may open %d more (ulimit -n %d); sampling per CPU instead is not permitted here (%v, kernel.perf_event_paranoid=%d): run gprof as root or with CAP_PERFMON, or raise the limit (ulimit -n %d), or use --backend ptrace",
		threads, need, max(free, 0), limit, err, p, need+need/8+fileReserve+limit-free)
}

// tryCPUWide opens (and closes) the configured event on the first CPU for
// every process, to find out whether per-CPU events are permitted.
func (s *perfSession) tryCPUWide() error {
	if s.kernelDenied {
		// Per-CPU events need more privilege than kernel-mode sampling.
		return unix.EACCES
	}
	a := s.cpuAttr()
	a.Bits |= unix.PerfBitDisabled
	fd, err := perfEventOpen(&a, -1, s.cpus[0], -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// cpuAttr is the configured event as a per-CPU one: no inheritance (it
// follows a CPU, not a task) and no enabling on exec.
func (s *perfSession) cpuAttr() unix.PerfEventAttr {
	a := s.attr
	a.Bits &^= unix.PerfBitInherit | unix.PerfBitEnableOnExec | unix.PerfBitDisabled
	return a
}

// openCPUs opens one event per CPU for every task, each with its ring
// (and, with OffCPU, the switch-out event writing into it). The rings are
// twice the size of per-thread ones: without the process filter they take
// the samples of every process that runs, which the reader drops, besides
// the targets'.
func (s *perfSession) openCPUs() error {
	s.attr = s.cpuAttr()
	s.gate(&s.attr)
	s.attr.Bits |= unix.PerfBitExcludeIdle // the idle task has nothing to show
	// With the process filter, each event is enabled once the filter is
	// on it (unless --control keeps it off): until then it would write
	// every process's samples.
	enable := s.filter != nil && s.attr.Bits&unix.PerfBitDisabled == 0
	if enable {
		s.attr.Bits |= unix.PerfBitDisabled
		defer func() { s.attr.Bits &^= unix.PerfBitDisabled }()
	}
	if s.cgroup != nil {
		// Every pacerEvery-th sample wakes its CPU's pacer (pace.go's
		// runFiring); the reader does not wait on these rings (see run).
		s.attr.Bits &^= unix.PerfBitWatermark
		s.attr.Wakeup = pacerEvery
	}
	for i, cpu := range s.cpus {
		fd, err := s.eventOpen(&s.attr, -1, cpu)
		if err != nil {
			if err == unix.ENODEV && i > 0 {
				continue // the CPU went offline
			}
			return err
		}
		r, err := s.mapRing(fd, -1, cpu)
		if err != nil {
			return err
		}
		s.fds = append(s.fds, r.fd)
		s.rings[cpu] = r
		s.ringList = append(s.ringList, r)
		if err := s.noteEvent(r.fd, 0); err != nil {
			return err
		}
		if err := s.walkFrames(r.fd); err != nil {
			return err
		}
		if enable {
			if err := unix.IoctlSetInt(r.fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
				return err
			}
		}
	}
	if enable {
		// The other events (openExtras) have no filter to wait for.
		s.attr.Bits &^= unix.PerfBitDisabled
	}
	if err := s.openExtras(-1); err != nil {
		return err
	}
	if s.opts.OffCPU {
		if err := s.openSwitches(-1); err != nil {
			return err
		}
	}
	return s.openSideband(-1)
}

// targets is what a per-CPU layout keeps of the records of every task: the
// processes attached whole and those they start, the threads attached
// alone; or, system-wide, every process but the idle task and, without
// -k, the kernel's threads. The decoder asks it about each record, in the
// order the rings give them; FORK records keep it up to date.
type targets struct {
	all     bool
	pids    map[int]bool // followed whole
	tids    map[int]bool // followed alone
	kthread map[int]bool // system-wide without -k: dropped
	kernel  bool         // system-wide with -k: keep kernel threads
	self    int          // system-wide: gprof, never kept
	// inKernel, when set, says whether the kernel's process filter
	// (filter.go) follows pid: it learns of a child as the child is
	// created, where FORK records may come after the child's first
	// sample (that is in another CPU's ring, which may be read first).
	inKernel func(pid int) bool
}

// targets is the decoder's filter.
var _ perfrecord.Filter = (*targets)(nil)

// kthreadd is the kernel thread every other kernel thread is forked from.
const kthreadd = 2

func newTargets(pids, tids []int) *targets {
	t := &targets{pids: map[int]bool{}, tids: map[int]bool{}}
	for _, p := range pids {
		t.pids[p] = true
	}
	for _, id := range tids {
		t.tids[id] = true
	}
	return t
}

// systemTargets keeps every process; kthreads are the kernel threads now
// running, dropped unless kernel is set.
func systemTargets(kthreads []int, kernel bool) *targets {
	t := &targets{all: true, kernel: kernel, kthread: map[int]bool{kthreadd: true}}
	for _, p := range kthreads {
		t.kthread[p] = true
	}
	return t
}

// Keep reports whether the records of task pid/tid are kept.
func (t *targets) Keep(pid, tid int) bool {
	switch {
	case t.all:
		return pid > 0 && pid != t.self && (t.kernel || !t.kthread[pid])
	case t.pids[pid]:
		return true
	case t.tids[tid]:
		return true
	case t.inKernel != nil && t.inKernel(pid):
		t.pids[pid] = true
		return true
	}
	return false
}

// Fork notes a new task: a process started by a followed one is followed;
// a process id that comes back for an unrelated process is not.
func (t *targets) Fork(pid, ppid int) {
	if pid == ppid {
		return // a new thread: its process decides
	}
	if t.all {
		if t.kthread[ppid] {
			t.kthread[pid] = true
		} else {
			delete(t.kthread, pid)
		}
		return
	}
	if t.pids[ppid] {
		t.pids[pid] = true
	} else {
		delete(t.pids, pid)
	}
}

// followed lists the processes followed whole (not system-wide).
func (t *targets) followed() []int {
	var ps []int
	for p := range t.pids {
		ps = append(ps, p)
	}
	return ps
}

// forget stops following a process that has gone.
func (t *targets) forget(pid int) { delete(t.pids, pid) }
