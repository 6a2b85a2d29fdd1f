//go:build linux

package perf

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/proc"
	"github.com/gprof-dev/gprof/attach/internal/procmaps"
	"github.com/gprof-dev/gprof/attach/internal/yield"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/perfrecord"
)

// The perf_event backend.
//
// Topology: for every target task (the launch helper, or each thread of each
// attached pid) one event per online CPU with inherit, so threads and
// processes the task creates later are sampled too. All events of a CPU
// write into one ring (PERF_EVENT_IOC_SET_OUTPUT into the CPU's first
// event), so there are as many rings as CPUs whatever the number of threads.
// Since a CPU runs one thread at a time, a ring sees at most one sample per
// interval, which is what the ring is sized for.
//
// A reader goroutine polls the events, drains every ring into a batch,
// sorts the batch by time and hands it to the goroutine that called Record,
// which calls the handler; so a slow handler queues batches instead of
// losing samples. Recording ends when ctx is cancelled or every event
// reports POLLHUP (its task and all tasks that inherited it have exited;
// attached pids are also checked in /proc).
//
// Stopping: events are disabled, the rings drained, the fds closed; an
// attached target just runs on. A launched command lives within its
// recording: on cancel it gets a moment to finish (Ctrl-C already sent
// SIGINT to the whole foreground group), then SIGTERM (see proc.Launched.Stop).

// perf_event_attr bits that x/sys/unix does not name (kernel bitfield order).
const (
	bitBuildID = 1 << 34 // mmap2 records carry the build-id (5.12+)
)

// sideBand are the attr bits that ask for records other than samples:
// only the first event of a task and CPU has them, so that each mapping,
// name and task is reported once.
const sideBand = unix.PerfBitMmap | unix.PerfBitMmap2 | unix.PerfBitMmapData | unix.PerfBitComm |
	unix.PerfBitCommExec | unix.PerfBitTask | unix.PerfBitContextSwitch | bitBuildID

// perfEventOpen is unix.PerfEventOpen; tests replace it to simulate a
// kernel that refuses perf events.
var perfEventOpen = unix.PerfEventOpen

const (
	defaultInterval  = time.Millisecond
	defaultStackSize = 16384
	maxStackSize     = 65528
	pollTimeoutMs    = 20
	// pacedReadMs: how often the rings of a paced cgroup are read. They
	// hold a quarter second (ringPages); every 5 ms, each round woke the
	// handler too, 200 times a second, on the command's CPUs.
	pacedReadMs      = 20
	mapsRescanPeriod = 100 * time.Millisecond // see perfSession.threadMaps
)

type perfSession struct {
	// release, when set, starts a launched command: the reader calls it
	// once it reads (run); releaseErr is what it returned.
	release    func() error
	releaseErr error
	releasedAt int64 // when release was called (releasing)
	// spare holds the batches the reader may fill while the handler
	// takes others, prepared before the targets start (preparedBatches).
	spare chan *batch
	// prepared is closed once the spare batches are (preparedBatches).
	prepared chan struct{}
	// touched is closed once the rings have been read a first time
	// (touchRings).
	touched chan struct{}
	opts    attach.Options
	attr    unix.PerfEventAttr
	event   string
	// format is how the events' records are laid out but for the sample
	// type, which is the attr's once probe has settled it; dec, set
	// then, decodes them.
	format   perfrecord.Format
	dec      *decoder
	cpus     []int
	rings    map[int]*ring
	ringList []*ring
	pages    int
	fds      []int
	opened   map[int]bool
	// walker copies Python frames at each sample (pywalk.go); nil where
	// it could not be loaded, walkerErr saying why.
	walker    *pyWalker
	walkerErr error
	// filter keeps attached processes' samples alone in the kernel
	// (filter.go); nil where they are sampled per thread, filterErr
	// saying why where a filter was tried.
	filter    *pidFilter
	filterErr error
	notices   []string
	// threadMaps holds, for each process sampled by thread alone (-t),
	// the mappings reported so far: the kernel reports a mapping only to
	// the events of the thread that made it, so those its other threads
	// make are found by rereading /proc/PID/maps.
	threadMaps map[int]map[procmaps.Key]bool
	// kernelDenied is set when the kernel refused to count kernel mode
	// (perf_event_paranoid >= 2 without CAP_PERFMON); paranoid is the
	// setting that did.
	kernelDenied bool
	paranoid     int
	periodIsNs   bool
	// readCPU: samples carry their event's count, which says their CPU
	// time (perfrecord.Decoder.ReadCPU; see userModeOnly).
	readCPU bool
	// switchStacksDenied: off-CPU stacks cannot be sampled (see openSwitches).
	switchStacksDenied bool
	// layout is how the events are opened (see layout.go).
	layout layout
	// sampling is when every event was open (event.Now).
	sampling int64
	// watch, when set, are the processes whose end ends the recording
	// (a system-wide recording of a command: the command).
	watch []int
	// ctl is the state of Options.Control (control.go).
	ctl controlState
	// events are the events sampled, the first one's attr being attr's
	// (see events.go); with leader set, the first is a dummy event that
	// only reports mappings, names and tasks, and event i is the
	// recording's event i-1.
	events []*perfEvent
	leader bool
	// probesOpen: the probes, which are opened per CPU for every task
	// (see openProbes), are open; unpolled are their files, which never
	// hang up.
	probesOpen bool
	unpolled   map[int]bool
	// outputTo maps an event that writes into another's ring
	// (shareRing) to that ring's fd.
	outputTo map[int]int
	// launched holds, for a command launched under per-CPU events, its
	// pid and the time of its exec (until that is seen, minus the time
	// it was released): the records of gprof's launch helper before that
	// are not the command's.
	launched map[int]int64
	// pace varies the per-CPU events' interval (pace.go); nil when they
	// are per-thread.
	pace *pacing
	// cgroup is a launched command's own (cgroup.go), to which per-CPU
	// events are kept; nil when there is none.
	cgroup    *cgroup
	cgroupErr error
}

func (s *perfSession) notice(format string, args ...any) {
	s.notices = append(s.notices, fmt.Sprintf(format, args...))
}

// The perf backend is Linux's first: Auto falls back to ptrace when perf
// events are denied.
func init() {
	attach.Register(attach.Driver{Name: attach.Perf, Order: 10, Start: recordPerf, SystemWide: true, Control: true, Events: true})
}

func recordPerf(ctx context.Context, opts attach.Options, h event.Handler) (res attach.Result, err error) {
	res = attach.Result{ExitCode: -1, Backend: "perf",
		// The kernel samples a thread every interval of its CPU time, so
		// it falls short only when it throttles the event (past
		// kernel.perf_event_max_sample_rate, which it lowers itself when
		// sampling takes too long) or drops records from a full ring.
		RateAdvice: "the kernel throttled sampling or dropped records: lower the rate (-r), or raise kernel.perf_event_max_sample_rate"}
	notify := opts.Notice
	if notify == nil {
		notify = func(string) {}
	}
	s := &perfSession{opts: opts, rings: map[int]*ring{}, opened: map[int]bool{}}
	if err := s.configure(); err != nil {
		return res, err
	}
	if err := s.probe(); err != nil {
		if perfDenied(err) {
			// Nothing is launched or attached yet: the dispatcher may
			// fall back to ptrace.
			return res, attach.Unavailable(err, "perf events", deniedReason(err), s.notices...)
		}
		return res, err
	}
	res.Event = s.event
	if opts.Sampling != nil {
		var specs []attach.EventSpec
		for i, ev := range s.events {
			if i > 0 || !s.leader {
				specs = append(specs, ev.spec)
			}
		}
		opts.Sampling(specs)
	}
	defer s.close()
	defer func() {
		// The reader goroutine is done with the decoder by now.
		if s.kernelDenied && s.dec.ReadCPU && s.dec.NoStack > 0 {
			res.NoStackCPU = time.Duration(s.dec.NoStack)
			res.NoStackReason = fmt.Sprintf("kernel mode, not sampled at kernel.perf_event_paranoid=%d", s.paranoid)
		}
	}()

	s.spare, s.prepared = preparedBatches()
	first := &batch{}
	first.arena.Prepare(preparedBytes)
	var l *proc.Launched
	setup := event.Now()
	switch {
	case len(opts.Command) > 0:
		var err error
		if l, err = proc.Launch(opts.Command, opts.Env, opts.Dir); err != nil {
			return res, err
		}
		if opts.SystemWide {
			// Everything, from before the command starts until it exits.
			if err := s.openSystem(first); err != nil {
				l.Abort()
				return res, err
			}
			s.watch = []int{l.Pid}
		} else if s.launchCgroup(l.Pid) {
			// Per-CPU events of the command's own cgroup, whose
			// interval gprof varies (pace.go, cgroup.go); armed before
			// the helper may exec, whose own records are dropped
			// (launched).
			if err := s.openLaunched(l.Pid); err != nil {
				l.Abort()
				return res, s.openError(err, l.Pid, opts.Command[0])
			}
		} else {
			s.attr.Bits |= unix.PerfBitDisabled | unix.PerfBitEnableOnExec | unix.PerfBitInherit
			if err := s.openTask(l.Pid); err != nil {
				l.Abort()
				return res, s.openError(err, l.Pid, opts.Command[0])
			}
		}
		s.enableLaunched()
		s.touched = touchRings(s.ringList)
		// The pacers' threads start before the command does, not on
		// its CPU as it begins; the reader starts it (run).
		s.pace = s.startPacing()
		s.release = func() error {
			s.releasing()
			if err := l.Release(); err != nil {
				l.Abort()
				return err
			}
			if err := l.Started(); err != nil {
				return err
			}
			if opts.Control != nil {
				opts.Control.Started()
			}
			return nil
		}
	case opts.SystemWide:
		if err := s.openSystem(first); err != nil {
			return res, err
		}
	default:
		s.attr.Bits |= unix.PerfBitInherit
		if err := s.attach(first); err != nil {
			return res, err
		}
	}
	if opts.Control != nil && l == nil {
		opts.Control.Started()
	}
	res.Layout, res.Files = s.layout.String(), len(s.fds)
	// Sampling began when the last event was opened; the names and
	// mappings read after that wait in the rings.
	if s.sampling == 0 {
		s.sampling = event.Now()
	}
	res.Stats = map[string]string{"perf_setup_ms": fmt.Sprintf("%.1f", float64(s.sampling-setup)/1e6)}

	if l == nil {
		s.pace = s.startPacing()
	}
	s.dec.pace, s.dec.interval = s.pace, int64(s.attr.Sample)
	if s.pace == nil && s.periodIsNs {
		s.notice("%s", s.fixedIntervalNotice())
	}
	reason := s.run(ctx, first, h, &res, notify)
	if s.releaseErr != nil {
		s.pace.end()
		return res, s.releaseErr
	}
	if s.pace != nil {
		s.pace.end()
		res.Stats["perf_pacers"] = fmt.Sprintf("%d (%d wake-ups, %d after the event had fired again; %d of its repeats dropped; %d passes through Go's scheduler)", len(s.rings), s.pace.wakes.Load(), s.pace.late.Load(), s.pace.thinned, s.pace.passes.Load())
		if n := s.pace.lagged.Load(); n > 0 {
			res.Stats["perf_pacers"] += fmt.Sprintf("; periods set %.0f µs after their due points on average", float64(s.pace.lags.Load())/float64(n)/1e3)
		}
		if n := s.pace.noAlarm.Load(); n > 0 {
			res.Stats["perf_pacers"] += fmt.Sprintf("; %d CPUs without an alarm, whose event started with a whole period", n)
		}
	}
	if s.dec.Dropped > 0 {
		res.Stats["perf_other_samples"] = fmt.Sprint(s.dec.Dropped)
	}
	if s.walker != nil && s.walker.written > 0 {
		res.Stats["perf_python_snapshots"] = s.walker.stats()
	} else if s.walkerErr != nil && s.dec.interpSeen {
		res.Stats["perf_python_snapshots"] = "none: " + s.walkerErr.Error()
	}

	if l != nil {
		if reason == stopExited {
			res.ExitCode = l.Wait()
		} else {
			res.ExitCode = l.Stop(notify)
		}
	}
	if res.Lost > 0 {
		notify(fmt.Sprintf("the kernel dropped %d records (ring buffer full); the profile is missing some samples", res.Lost))
	}
	return res, nil
}

// configure builds the attr from opts.
func (s *perfSession) configure() error {
	o := s.opts
	interval := o.Interval
	if interval <= 0 {
		interval = defaultInterval
	}
	if interval < 10*time.Microsecond {
		s.notice("interval %v is below the kernel's 10µs minimum for clock events; using 10µs", interval)
		interval = 10 * time.Microsecond
	}
	rate := int(time.Second / interval)
	if maxRate, ok := proc.ReadSysctlInt("perf_event_max_sample_rate"); ok && rate > maxRate {
		s.notice("sampling at %d Hz exceeds kernel.perf_event_max_sample_rate=%d; the kernel may throttle", rate, maxRate)
	}
	a := &s.attr
	a.Size = uint32(unsafe.Sizeof(*a))
	if err := s.resolveEvents(interval, rate); err != nil {
		return err
	}
	// The first event's own settings; a cycle count, say, is not a
	// time: it samples at the interval's frequency, the kernel adapting
	// the period (see perfEvent.sampling).
	main := s.events[0]
	s.event = main.spec.Name
	if s.leader {
		s.event = s.events[1].spec.Name
	}
	a.Type, a.Config, a.Ext1, a.Ext2, a.Sample = main.attr.Type, main.attr.Config, main.attr.Ext1, main.attr.Ext2, main.attr.Sample
	a.Bits |= main.attr.Bits
	periodIsNs := main.format.PeriodIsTime
	a.Sample_type = perfrecord.SampleIP | perfrecord.SampleTID | perfrecord.SampleTime |
		perfrecord.SampleCPU | perfrecord.SamplePeriod | perfrecord.SampleCallchain
	traced := false
	for _, ev := range s.events {
		traced = traced || ev.format.Trace != nil
	}
	if traced {
		// Every event of a ring has the same layout: the others'
		// samples carry an empty raw part.
		a.Sample_type |= perfrecord.SampleRaw
	}
	if len(s.events) > 1 {
		a.Sample_type |= perfrecord.SampleIdentifier
	}
	a.Bits |= unix.PerfBitMmap | unix.PerfBitMmap2 | unix.PerfBitComm | unix.PerfBitCommExec |
		unix.PerfBitTask | unix.PerfBitSampleIDAll | unix.PerfBitUseClockID | unix.PerfBitExcludeHv |
		unix.PerfBitWatermark | bitBuildID
	if o.OffCPU {
		// Switch records say when each thread leaves and returns to a
		// CPU; a second event per task and CPU (see openTask) samples
		// the stack at each switch out. The identifier tells its samples
		// from the clock's in the shared ring.
		a.Bits |= unix.PerfBitContextSwitch
		a.Sample_type |= perfrecord.SampleIdentifier
	}
	if o.Switches {
		// The switch records alone: how many threads of a process run.
		a.Bits |= unix.PerfBitContextSwitch
	}
	// Data mappings too, of which the decoder keeps the marker files
	// programs map so that profilers find them (perfrecord.MarkerFile).
	a.Bits |= unix.PerfBitMmapData
	if !o.Kernel {
		// Samples in kernel mode are kept, without their kernel stack: a
		// thread's time in system calls is part of its CPU time, and its
		// user stack at the call says who made it. See probe for kernels
		// that refuse to sample kernel mode.
		a.Bits |= unix.PerfBitExcludeCallchainKernel
	}
	a.Clockid = unix.CLOCK_MONOTONIC
	a.Sample_max_stack = 127
	if v, ok := proc.ReadSysctlInt("perf_event_max_stack"); ok && v > 0 && v < 1<<16 {
		a.Sample_max_stack = uint16(v)
	}
	var regs perfrecord.RegsLayout
	stackSize := 0
	switch o.CallGraph {
	case "", "fp":
	case "dwarf":
		mask, ok := userRegs(runtime.GOARCH)
		if !ok {
			return fmt.Errorf("dwarf call graphs are not supported on %s", runtime.GOARCH)
		}
		stackSize = o.StackSize
		if stackSize <= 0 {
			stackSize = defaultStackSize
		}
		stackSize = (stackSize + 7) &^ 7
		if stackSize > maxStackSize {
			stackSize = maxStackSize
		}
		callee := o.Interp != nil && runtime.GOARCH == "amd64"
		if callee {
			// r12-r15 too (perf_regs.h: R12=20 ... R15=23, after the
			// others in the array), where CPython's eval loop keeps
			// what tells whether a Python stack read after the sample
			// is the sample's (event.Sample.CalleeRegs).
			mask |= 0xf << perfrecord.RegX86R12
		}
		regs = perfrecord.UserRegs(runtime.GOARCH, mask)
		if callee {
			regs.Callee, regs.NCallee = regs.Index(perfrecord.RegX86R12), 4
		}
		a.Sample_type |= perfrecord.SampleRegsUser | perfrecord.SampleStackUser
		a.Sample_regs_user = regs.Mask
		a.Sample_stack_user = uint32(stackSize)
	default:
		return fmt.Errorf("unknown call graph mode %q (want fp or dwarf)", o.CallGraph)
	}
	s.periodIsNs = periodIsNs
	s.pages = ringPages(rate, stackSize)
	if o.OffCPU || traced || len(s.events) > 1 {
		// Two switch records per wait (tens of thousands a second for
		// a thread that waits often) and a stack at each switch out;
		// or a stack at each tracepoint hit, which comes as often as
		// the program makes it.
		s.pages = min(s.pages*4, max(s.pages, (16<<20)/os.Getpagesize()))
	}
	if counting := slices.ContainsFunc(s.events, func(ev *perfEvent) bool {
		return !ev.format.PeriodIsTime && ev.attr.Bits&unix.PerfBitFreq == 0
	}); counting {
		// An event sampled every N occurrences comes as fast as the
		// program makes them (a page fault a microsecond, each with a
		// stack copy): the most a ring may hold (mapRing halves it
		// where locked memory is short).
		s.pages = max(s.pages, (16<<20)/os.Getpagesize())
	}
	a.Wakeup = uint32(s.pages * os.Getpagesize() / 4) // watermark in bytes
	s.format = perfrecord.Format{SampleIDAll: true, Regs: regs, PeriodIsTime: periodIsNs, Trace: main.format.Trace}
	s.cpus = proc.OnlineCPUs()
	return nil
}

// ringPages sizes one CPU's ring: room for a quarter second of samples at
// the full rate, at least samply's 32 stack copies, at least 128 pages
// (512 KiB, what kernel.perf_event_mlock_kb allows per CPU by default), at
// most 16 MiB; a power of two.
func ringPages(rate, stackSize int) int {
	ps := os.Getpagesize()
	rec := 64 + 8*32
	if stackSize > 0 {
		rec += stackSize + 64
	}
	want := rec * rate / 4
	if stackSize > 0 {
		want = max(want, max(stackSize, 4096)*32)
	}
	pages := max(want/ps, 128)
	pages = min(pages, (16<<20)/ps)
	p := 1
	for p < pages {
		p <<= 1
	}
	return p
}

// probe opens (and closes) the configured event on this process to find
// out early whether perf events work at all, adjusting the attr for what
// the kernel refuses.
func (s *perfSession) probe() error {
	try := func() error {
		a := s.attr
		// Inherit as the real events will: some sample types need it
		// checked (PERF_SAMPLE_READ with inherit needs Linux 6.12).
		a.Bits |= unix.PerfBitDisabled | unix.PerfBitInherit
		fd, err := perfEventOpen(&a, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	err := try()
	if err == unix.EINVAL && s.attr.Bits&bitBuildID != 0 {
		// Kernels before 5.12 do not know the build_id bit.
		s.attr.Bits &^= bitBuildID
		if err = try(); err == nil {
			s.notice("this kernel cannot report build-ids with mappings; they will be read from the files")
		}
	}
	if err == unix.EACCES || err == unix.EPERM {
		err = s.userModeOnly(try)
	}
	if err != nil {
		return s.openError(err, 0, "")
	}
	if err := s.probeEvents(); err != nil {
		return err
	}
	f := s.format
	f.SampleType = s.attr.Sample_type
	s.dec = newDecoder(f)
	s.dec.ReadCPU = s.readCPU
	s.dec.interp, s.dec.interpFind = s.opts.Interp, s.opts.InterpFind
	s.dec.interpFiles.mayHold = s.opts.InterpFile
	s.startFilter()
	s.startWalker()
	s.dec.KeepData = perfrecord.MarkerFile
	if s.opts.OffCPU {
		s.dec.SwitchIDs = map[uint64]bool{}
	}
	if len(s.events) > 1 {
		s.dec.EventIDs = map[uint64]int{}
		for i, ev := range s.events {
			if i > 0 || !s.leader {
				s.dec.Events = append(s.dec.Events, ev.format)
			}
		}
	}
	return nil
}

// userRegs returns the mask of the user registers a dwarf call graph
// needs on GOARCH (sample_regs_user), or false where it is not supported.
func userRegs(goarch string) (uint64, bool) {
	switch goarch {
	case "amd64":
		return 1<<perfrecord.RegX86BX | 1<<perfrecord.RegX86BP | 1<<perfrecord.RegX86SP | 1<<perfrecord.RegX86IP, true
	case "arm64":
		return 1<<perfrecord.RegARM64X29 | 1<<perfrecord.RegARM64LR | 1<<perfrecord.RegARM64SP | 1<<perfrecord.RegARM64PC, true
	}
	return 0, false
}

// userModeOnly reconfigures the attr for a kernel that refuses to sample
// kernel mode (perf_event_paranoid >= 2 without CAP_PERFMON). Samples then
// come from user mode only, but a clock event still counts the time its
// thread spends in the kernel: with PERF_SAMPLE_READ each sample carries
// that count, so its CPUDelta is all the CPU time the thread used since
// its previous sample, user and system, as the ptrace backend's are.
func (s *perfSession) userModeOnly(try func() error) error {
	s.attr.Bits |= unix.PerfBitExcludeKernel | unix.PerfBitExcludeCallchainKernel
	s.paranoid, _ = proc.ReadSysctlInt("perf_event_paranoid")
	if s.periodIsNs {
		s.attr.Sample_type |= perfrecord.SampleRead
		s.readCPU = true
	}
	err := try()
	if err == unix.EINVAL && s.readCPU {
		s.attr.Sample_type &^= perfrecord.SampleRead
		s.readCPU = false
		if err = try(); err == nil {
			s.notice("kernel.perf_event_paranoid=%d forbids sampling kernel mode, and this kernel (before 6.12) cannot count it otherwise: time in system calls is missing from the profile (allow it with `sysctl kernel.perf_event_paranoid=1`, or run as root)", s.paranoid)
		}
	}
	if err != nil {
		return err
	}
	s.kernelDenied = true
	if s.opts.Kernel {
		s.notice("kernel stacks are not permitted (kernel.perf_event_paranoid=%d; needs <=1 or CAP_PERFMON); recording user stacks only", s.paranoid)
	}
	return nil
}

// perfDenied reports whether err means perf events cannot be used by this
// process at all (paranoid > 2, seccomp, container policy), as opposed to
// a problem with one target.
func perfDenied(err error) bool {
	return errors.Is(err, attach.ErrPermission) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS)
}

func deniedReason(err error) string {
	if errors.Is(err, unix.ENOSYS) {
		return "perf_event_open is blocked, probably by a seccomp filter"
	}
	if p, ok := proc.ReadSysctlInt("perf_event_paranoid"); ok && p > 2 {
		return fmt.Sprintf("kernel.perf_event_paranoid=%d forbids them", p)
	}
	return "perf_event_open is not permitted here, probably by a container's seccomp policy"
}

// seccompFix is the advice when a seccomp filter blocks perf_event_open.
const seccompFix = "use --backend ptrace, or allow perf events in the container (docker run --cap-add PERFMON, or a seccomp profile that allows perf_event_open)"

// seccompFiltered reports whether a seccomp filter applies to gprof
// ("Seccomp: 2" in /proc/self/status); tests replace it.
var seccompFiltered = func() bool {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	_, rest, ok := strings.Cut(string(data), "\nSeccomp:")
	if !ok {
		return false
	}
	mode, _, _ := strings.Cut(rest, "\n")
	return strings.TrimSpace(mode) == "2"
}

// openError turns an errno from perf_event_open into an error with advice.
// pid 0 means gprof itself (the probe).
func (s *perfSession) openError(err error, pid int, what string) error {
	target := "gprof itself"
	if pid != 0 {
		target = fmt.Sprintf("pid %d", pid)
		if what != "" {
			target = fmt.Sprintf("%s (pid %d)", what, pid)
		}
	}
	var ee *eventError
	if errors.As(err, &ee) {
		return ee.err
	}
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return fmt.Errorf("open perf event for %s: %w", target, err)
	}
	switch errno {
	case unix.EACCES, unix.EPERM:
		p, _ := proc.ReadSysctlInt("perf_event_paranoid")
		// Under a seccomp filter, as in a container, a refusal that
		// perf_event_paranoid does not explain is the filter's (Docker's
		// default profile answers EPERM).
		if seccompFiltered() && (pid == 0 && p <= 2 || os.Geteuid() == 0) {
			return fmt.Errorf("open perf event for %s: %w: perf_event_open is refused by a seccomp filter (a container's security policy?): %s", target, attach.ErrPermission, seccompFix)
		}
		fix := "run gprof as root, or give it CAP_PERFMON (setcap cap_perfmon+ep gprof)"
		if p > 2 {
			fix += ", or allow unprivileged profiling with `sysctl kernel.perf_event_paranoid=2`"
		} else if pid != 0 {
			fix = "profile your own processes, " + fix
		}
		// errno is EACCES or EPERM, both worded "permission denied" like
		// ErrPermission itself, so only ErrPermission is shown.
		return fmt.Errorf("open perf event for %s: %w (kernel.perf_event_paranoid=%d): %s", target, attach.ErrPermission, p, fix)
	case unix.ESRCH:
		return fmt.Errorf("open perf event for %s: %w", target, attach.ErrNoSuchProcess)
	case unix.ENOSYS:
		return fmt.Errorf("open perf event for %s: %w: perf_event_open is blocked, probably by a seccomp filter (a container's security policy?): %s", target, attach.ErrPermission, seccompFix)
	case unix.ENOENT, unix.ENODEV, unix.EOPNOTSUPP:
		if s.event == "cycles" {
			return fmt.Errorf("the cycles event is not available on this machine (no hardware PMU, e.g. in a VM: %w); use --event cpu-clock", errno)
		}
		return fmt.Errorf("open %s event for %s: %w", s.event, target, errno)
	case unix.EMFILE, unix.ENFILE:
		return fmt.Errorf("open perf event for %s: %w (one file per thread and CPU is needed; raise `ulimit -n`)", target, errno)
	case unix.EINVAL:
		return fmt.Errorf("open %s event for %s: the kernel rejected the configuration (%w)", s.event, target, errno)
	}
	return fmt.Errorf("open perf event for %s: %w", target, errno)
}

// openTask opens one event per CPU on task tid.
func (s *perfSession) openTask(tid int) error {
	if s.opened[tid] {
		return nil
	}
	s.gate(&s.attr)
	for i, cpu := range s.cpus {
		fd, err := s.eventOpen(&s.attr, tid, cpu)
		if err != nil {
			if err == unix.ENODEV && i > 0 {
				continue // the CPU went offline
			}
			return err
		}
		r := s.rings[cpu]
		if r == nil {
			if r, err = s.mapRing(fd, tid, cpu); err != nil {
				return err
			}
			s.fds = append(s.fds, r.fd) // mapRing may have reopened it
			s.rings[cpu] = r
			s.ringList = append(s.ringList, r)
			if err := s.noteEvent(r.fd, 0); err != nil {
				return err
			}
			s.walkFrames(r.fd)
			continue
		}
		s.fds = append(s.fds, fd)
		if err := s.shareRing(fd, r, cpu); err != nil {
			return err
		}
		if err := s.noteEvent(fd, 0); err != nil {
			return err
		}
		s.walkFrames(fd)
	}
	if err := s.openExtras(tid); err != nil {
		return err
	}
	if s.opts.OffCPU {
		if err := s.openSwitches(tid); err != nil {
			return err
		}
	}
	if err := s.openSideband(tid); err != nil {
		return err
	}
	s.opened[tid] = true
	return nil
}

// switchAttr is the event that samples a thread's stack as it is switched
// out: the software context-switches event at period 1, with the clock
// event's stack settings and none of its side-band records.
func (s *perfSession) switchAttr() unix.PerfEventAttr {
	a := s.attr
	a.Type = perfrecord.TypeSoftware
	a.Config = perfrecord.CountSWContextSwitches
	// Every switch by default (period 1). With a cap, the kernel's
	// frequency mode lengthens the period to keep each thread's event
	// near the cap: it counts per second of the thread's time on a CPU,
	// so a thread that wakes briefly and often is held well below it.
	// The waits it skips are shown at the thread's previous stack (the
	// builder counts them).
	a.Sample = 1
	if s.opts.OffCPUCap > 0 {
		a.Sample = uint64(s.opts.OffCPUCap)
		a.Bits |= unix.PerfBitFreq
	} else {
		a.Bits &^= unix.PerfBitFreq
	}
	a.Bits &^= sideBand
	// The sample is taken in the scheduler, in kernel mode: excluding
	// kernel mode would exclude every sample. Its kernel stack is still
	// left out unless asked for.
	a.Bits &^= unix.PerfBitExcludeKernel
	a.Sample_type &^= perfrecord.SampleRead
	return a
}

// openSwitches opens the switch-out sampling event of tid on every CPU,
// writing into that CPU's ring.
func (s *perfSession) openSwitches(tid int) error {
	if s.kernelDenied {
		// Not permitted: the switch records still time each wait, and
		// the builder gives it the thread's latest stack.
		if !s.switchStacksDenied {
			s.switchStacksDenied = true
			s.notice("off-CPU stacks need kernel-mode sampling (kernel.perf_event_paranoid=%d; needs <=1 or CAP_PERFMON): waits are timed but shown at the thread's latest CPU sample", s.paranoid)
		}
		return nil
	}
	a := s.switchAttr()
	return s.openOnRings(&a, tid, func(fd int) error {
		var id uint64
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_ID, uintptr(unsafe.Pointer(&id))); errno != 0 {
			return fmt.Errorf("identify the context-switch event: %w", errno)
		}
		s.dec.SwitchIDs[id] = true
		return nil
	})
}

// openOnRings opens event a of tid (-1: every task) on each CPU that has a
// ring, writing into that ring, and hands each file to opened. A CPU gone
// offline is passed over.
func (s *perfSession) openOnRings(a *unix.PerfEventAttr, tid int, opened func(fd int) error) error {
	for _, cpu := range s.cpus {
		r := s.rings[cpu]
		if r == nil {
			continue
		}
		fd, err := s.eventOpen(a, tid, cpu)
		if err != nil {
			if err == unix.ENODEV {
				continue
			}
			return err
		}
		s.fds = append(s.fds, fd)
		if err := s.shareRing(fd, r, cpu); err != nil {
			return err
		}
		if err := opened(fd); err != nil {
			return err
		}
	}
	return nil
}

// shareRing has event fd write into ring r, cpu's, rather than a ring of
// its own.
func (s *perfSession) shareRing(fd int, r *ring, cpu int) error {
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, r.fd); err != nil {
		return fmt.Errorf("share the perf ring of cpu %d: %w", cpu, err)
	}
	if s.outputTo == nil {
		s.outputTo = map[int]int{}
	}
	s.outputTo[fd] = r.fd
	return nil
}

// mapRing maps the ring of event fd (on tid and cpu), falling back to
// smaller rings when the locked memory limit refuses. The wakeup watermark
// is part of the event, so a smaller ring needs the event reopened; the
// ring's fd is then a new one.
func (s *perfSession) mapRing(fd, tid, cpu int) (*ring, error) {
	shrunk := false
	for {
		r, err := mapRing(fd, s.pages)
		if err == nil {
			if shrunk {
				kb, _ := proc.ReadSysctlInt("perf_event_mlock_kb")
				s.notice("perf ring buffers limited by locked memory (kernel.perf_event_mlock_kb=%d); using %d KiB per CPU, samples may be lost (raise with `sysctl kernel.perf_event_mlock_kb=2048`)", kb, s.pages*os.Getpagesize()/1024)
			}
			return r, nil
		}
		if err != unix.EPERM && err != unix.ENOMEM || s.pages <= 16 {
			kb, _ := proc.ReadSysctlInt("perf_event_mlock_kb")
			unix.Close(fd)
			if err == unix.EPERM {
				return nil, fmt.Errorf("map perf ring for cpu %d: %w (locked memory limit: kernel.perf_event_mlock_kb=%d; raise it with `sysctl kernel.perf_event_mlock_kb=2048` or `ulimit -l`, or run as root)", cpu, attach.ErrPermission, kb)
			}
			return nil, fmt.Errorf("map perf ring for cpu %d: %w", cpu, err)
		}
		s.pages /= 2
		shrunk = true
		if s.attr.Bits&unix.PerfBitWatermark != 0 {
			// A watermark in bytes, a quarter of the ring. Without the
			// bit, Wakeup counts samples: a paced event's wakes its
			// pacer every pacerEvery of them (openCPUs), which must
			// stay so (a quarter ring's worth of bytes as a count
			// never woke it, and the event kept its first period).
			s.attr.Wakeup = uint32(s.pages * os.Getpagesize() / 4)
		}
		unix.Close(fd)
		if fd, err = s.eventOpen(&s.attr, tid, cpu); err != nil {
			return nil, err
		}
	}
}

// attach opens events on every thread of every pid and synthesizes the
// state perf does not report for existing tasks: names and mappings.
func (s *perfSession) attach(b *batch) error {
	t0 := event.Now()
	for _, pid := range s.opts.Pids {
		if !proc.ProcessExists(pid) {
			return fmt.Errorf("pid %d: %w", pid, attach.ErrNoSuchProcess)
		}
	}
	for _, pid := range s.opts.Pids {
		s.walkProcess(pid)
	}
	threads := len(s.opts.Tids)
	for _, pid := range s.opts.Pids {
		tids, _ := proc.ListTasks(pid)
		threads += len(tids)
	}
	var err error
	if s.layout, err = s.chooseLayout(threads); err != nil {
		return err
	}
	if s.layout == perCPU {
		for _, pid := range s.opts.Pids {
			// A zombie has no user space left to sample (the per-thread
			// layout finds it when its events cannot be opened).
			if tids, _ := proc.ListTasks(pid); len(tids) == 0 || len(tids) == 1 && proc.ProcessState(pid) == 'Z' {
				return fmt.Errorf("pid %d has exited: %w", pid, attach.ErrNoSuchProcess)
			}
		}
		if err := s.openCPUs(); err != nil {
			return s.openError(err, 0, "every task")
		}
		t := newTargets(s.opts.Pids, s.opts.Tids)
		if s.filter != nil {
			t.inKernel = s.filter.follows
		}
		s.dec.setFilter(t)
		s.sampling = event.Now()
		var err error
		s.whileDraining(b, func() { err = s.synthesize(b, t0) })
		return err
	}
	for _, pid := range s.opts.Pids {
		tids, err := proc.ListTasks(pid)
		if err != nil {
			return fmt.Errorf("pid %d: %w", pid, attach.ErrNoSuchProcess)
		}
		n := 0
		for _, tid := range tids {
			err := s.openTask(tid)
			if err == unix.ESRCH {
				continue // the thread exited meanwhile
			}
			if err != nil {
				return s.openError(err, pid, "")
			}
			n++
		}
		if n == 0 || len(tids) == 1 && proc.ProcessState(pid) == 'Z' {
			return fmt.Errorf("pid %d exited while attaching: %w", pid, attach.ErrNoSuchProcess)
		}
	}
	// A thread alone: without inherit, so the threads it creates are not
	// sampled, as with perf record -t.
	s.attr.Bits &^= unix.PerfBitInherit
	for _, tid := range s.opts.Tids {
		if err := s.openTask(tid); err != nil {
			s.attr.Bits |= unix.PerfBitInherit
			if err == unix.ESRCH {
				return fmt.Errorf("thread %d: %w", tid, attach.ErrNoSuchProcess)
			}
			return s.openError(err, tid, "thread")
		}
	}
	s.attr.Bits |= unix.PerfBitInherit
	// Threads created while we were opening: those created by a thread
	// that already had events inherited them (and produced a FORK record);
	// the others need their own events. Repeat until nothing is new.
	for round := 0; round < 20; round++ {
		var fresh []int
		for _, pid := range s.opts.Pids {
			tids, _ := proc.ListTasks(pid)
			for _, tid := range tids {
				if !s.opened[tid] {
					fresh = append(fresh, tid)
				}
			}
		}
		if len(fresh) == 0 {
			break
		}
		time.Sleep(time.Millisecond) // let pending FORK records land
		s.drain(b)
		inherited := map[int]bool{}
		for _, e := range b.events {
			if f, ok := e.(*event.Fork); ok {
				inherited[f.Tid] = true
			}
		}
		for _, tid := range fresh {
			if inherited[tid] {
				s.opened[tid] = true
				continue
			}
			if err := s.openTask(tid); err != nil && err != unix.ESRCH {
				return s.openError(err, tid, "")
			}
		}
	}
	s.sampling = event.Now()
	s.whileDraining(b, func() { err = s.synthesize(b, t0) })
	return err
}

// whileDraining runs synth (reading the names and mappings of every
// target, which takes a second for 10,000 threads or a busy machine's
// processes) while a goroutine drains the rings, already sampling, so
// that they do not overflow meanwhile; what it drained goes into b after
// what synth put there.
func (s *perfSession) whileDraining(b *batch, synth func()) {
	early := &batch{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(pollTimeoutMs * time.Millisecond / 4)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.drain(early)
			}
		}
	}()
	synth()
	close(done)
	wg.Wait()
	b.events = append(b.events, early.events...)
	b.lost += early.lost
	b.notices = append(b.notices, early.notices...)
}

// synthesize adds to b the names and mappings of the targets that exist
// already, dated t0, before any sample: the kernel reports only those
// that change. A thread alone gets its process's mappings too, so its
// frames are named, and its process's command line, to name the process.
func (s *perfSession) synthesize(b *batch, t0 int64) error {
	procTids := map[int][]int{}
	for _, pid := range s.opts.Pids {
		procTids[pid], _ = proc.ListTasks(pid)
	}
	for _, tid := range s.opts.Tids {
		if pid, _, _, ok := proc.TaskInfo(tid); ok {
			procTids[pid] = append(procTids[pid], tid)
		}
	}
	s.synthesizeTasks(b, t0, procTids)
	return nil
}

// synthesizeTasks adds to b the names of the threads procTids lists, by
// process, and their processes' mappings, dated t0.
func (s *perfSession) synthesizeTasks(b *batch, t0 int64, procTids map[int][]int) {
	var synth []event.Event
	for pid, tids := range procTids {
		argv := proc.ReadCmdline(pid)
		for _, tid := range tids {
			name := proc.ReadTaskComm(pid, tid)
			if name == "" {
				continue
			}
			synth = append(synth, &event.Comm{Time: t0, Pid: pid, Tid: tid, Name: name, Argv: argv})
		}
		maps, err := procmaps.Read(pid, t0)
		if err != nil && proc.ProcessExists(pid) {
			s.notice("cannot read the mappings of pid %d: %v", pid, err)
		}
		for _, m := range maps {
			s.dec.interpFiles.note(m)
			synth = append(synth, m)
		}
		if !s.opts.SystemWide && !slices.Contains(s.opts.Pids, pid) {
			if s.threadMaps == nil {
				s.threadMaps = map[int]map[procmaps.Key]bool{}
			}
			seen := map[procmaps.Key]bool{}
			for _, m := range maps {
				seen[procmaps.KeyOf(m)] = true
			}
			s.threadMaps[pid] = seen
		}
	}
	b.events = append(synth, b.events...)
}

// openSystem opens the per-CPU events of a system-wide recording and
// synthesizes the names and mappings of every process running, and of the
// kernel's threads with -k (the events come first, so that a process
// starting meanwhile is in one or the other).
func (s *perfSession) openSystem(b *batch) error {
	t0 := event.Now()
	s.layout = perCPU
	if err := s.tryCPUWide(); err != nil {
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			p, _ := proc.ReadSysctlInt("perf_event_paranoid")
			return fmt.Errorf("recording every process (-a) is not permitted (kernel.perf_event_paranoid=%d): %w; run gprof as root or with CAP_PERFMON, or allow it with `sysctl kernel.perf_event_paranoid=0`", p, attach.ErrPermission)
		}
		return s.openError(err, 0, "")
	}
	if err := s.openCPUs(); err != nil {
		return s.openError(err, 0, "")
	}
	pids, err := proc.ListProcesses()
	if err != nil {
		return err
	}
	procTids := map[int][]int{}
	var kthreads []int
	for _, pid := range pids {
		if pid == os.Getpid() {
			continue
		}
		if _, _, kthread, ok := proc.TaskInfo(pid); !ok {
			continue
		} else if kthread {
			kthreads = append(kthreads, pid)
			if !s.opts.Kernel {
				continue
			}
		}
		if tids, err := proc.ListTasks(pid); err == nil {
			procTids[pid] = tids
		}
	}
	t := systemTargets(kthreads, s.opts.Kernel)
	t.self = os.Getpid()
	s.dec.setFilter(t)
	s.sampling = event.Now()
	s.whileDraining(b, func() { s.synthesizeTasks(b, t0, procTids) })
	return nil
}

// rescanMaps adds to b the mappings of processes sampled by thread alone
// that were not reported yet.
func (s *perfSession) rescanMaps(b *batch) {
	now := event.Now()
	for pid, seen := range s.threadMaps {
		maps, _ := procmaps.Read(pid, now)
		for _, m := range maps {
			if k := procmaps.KeyOf(m); !seen[k] {
				seen[k] = true
				s.dec.interpFiles.note(m)
				b.events = append(b.events, m)
			}
		}
	}
}

// drain decodes everything in every ring into b.
func (s *perfSession) drain(b *batch) { s.drainBefore(b, math.MaxInt64) }

// drainBefore drains the rings of the records written before cutoff
// (event.Now's clock), and leaves the later ones for the next round. The
// rings are read one after the other while the CPUs write on: without a
// cutoff, a record written to a ring already read this round (a parent's
// FORK, a thread's sample before it moved) comes out a round after later
// records of rings read after it (the child's exec, the thread's next
// sample), and the handler sees them out of order: a child named after
// its parent, a sample that goes back in time.
func (s *perfSession) drainBefore(b *batch, cutoff int64) {
	var stop func(rec []byte) bool
	if cutoff != math.MaxInt64 {
		stop = func(rec []byte) bool {
			t, ok := s.dec.RecordTime(rec)
			return ok && t > cutoff
		}
	}
	// The frame walker's snapshots before the samples they go with
	// (each is written as its sample is taken, just before it).
	s.walker.drain()
	for _, r := range s.ringList {
		r.drain(func(rec []byte) { s.dec.decode(rec, b) }, stop)
	}
	s.dec.RoundDone()
}

type stopReason int

const (
	stopCancelled stopReason = iota
	stopExited
)

// The reader fills a batch while the handler takes the ones before it;
// spareBatches wait for it, the first few prepared (their arenas' memory
// mapped) as the targets start: on a virtual machine, mapping it as the
// first batches filled cost a 64 ms program's CPU 2 ms of page faults, on
// the program's CPU as often as not. A batch of a 1 kHz recording holds
// 330 KiB of stack copies a busy CPU (a round of pacedReadMs); the
// prepared ones last the reader through the hold (holdFor) of a program
// that short, five rounds and the first.
const (
	spareBatches  = 8
	preparedCount = 6
	preparedBytes = 1 << 20
)

// preparedBatches returns the spare batches' channel, which fills with
// preparedCount prepared ones meanwhile, and a channel closed once it
// has: mapping 4 MiB of them (1,000 page faults) took 18 ms on a 2-CPU
// VM, most of it while the rest of the session is set up, and a launched
// command's helper starts; the command is released after.
func preparedBatches() (chan *batch, chan struct{}) {
	free := make(chan *batch, spareBatches)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range preparedCount {
			b := &batch{}
			b.arena.Prepare(preparedBytes)
			free <- b
		}
	}()
	return free, done
}

// holdFor is how long the handler leaves a recording's first batches
// alone. Its work on them (a new file's identity and unwind tables,
// unwinding every stack copy, building the profile) runs on the targets'
// CPUs as often as not, and much of it falls at the start. Held back, a
// program that short is handled once it has exited: a 64 ms program in
// two busy threads on two CPUs, each thread waited for gprof's other
// threads 3.4 ms a run before, 2.7 ms after (bench/gapcause, 24 runs
// each, interleaved). What cannot wait (opening a mapped file while its
// process lives, reading a new process's counters) Options.Ahead does as
// the batch comes. The hold ends early when the reader is down to its
// last spare batch: holding more would have it map new memory, page
// faults on those CPUs (preparedCount is sized for the hold).
var holdFor = 200 * time.Millisecond

// holdOn says whether a batch that comes at now is held back, the hold
// ending at end, with spare batches left to the reader.
func holdOn(now, end time.Time, spare int) bool {
	return now.Before(end) && spare > 1
}

// run drains the rings until ctx is cancelled or all targets have exited,
// calling h on this goroutine.
func (s *perfSession) run(ctx context.Context, first *batch, h event.Handler, res *attach.Result, notify func(string)) stopReason {
	batches := make(chan *batch, 256)
	free := s.spare
	if free == nil {
		free = make(chan *batch, spareBatches)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		wake = -1
	}
	done := make(chan struct{})
	var waker sync.WaitGroup
	waker.Add(1)
	var control <-chan struct{}
	if s.opts.Control != nil {
		control = s.opts.Control.Wake()
	}
	go func() {
		defer waker.Done()
		for {
			select {
			case <-ctx.Done():
				if wake >= 0 {
					unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
				}
				return
			case <-control:
				// Sampling is to be turned off or on: wake the reader.
				if wake >= 0 {
					unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
				}
			case <-done:
				return
			}
		}
	}()
	reason := make(chan stopReason, 1)
	var stopped int64 // when the events were disabled; read after reason
	go func() {
		defer close(batches)
		// Its own OS thread, which may be made real-time (see below)
		// and ends with it.
		runtime.LockOSThread()
		realtime := false
		var undoRealtime func()
		defer func() {
			if undoRealtime != nil {
				undoRealtime()
			}
		}()
		first.notices = append(s.notices, first.notices...)
		s.notices = nil
		send := func(b *batch) {
			if len(b.events) == 0 && b.lost == 0 && len(b.notices) == 0 {
				b.reset()
				select {
				case free <- b:
				default:
				}
				return
			}
			slices.SortStableFunc(b.events, func(x, y event.Event) int {
				tx, ty := event.EventTime(x), event.EventTime(y)
				switch {
				case tx < ty:
					return -1
				case tx > ty:
					return 1
				}
				return 0
			})
			if len(s.launched) > 0 {
				b.events = s.dropHelper(b.events)
			}
			batches <- b
		}
		getBatch := func() *batch {
			select {
			case b := <-free:
				return b
			default:
				return &batch{}
			}
		}
		throttled := false
		// Until the events are disabled, each round takes the records
		// written before it began (see drainBefore); the last takes all.
		cutoff := func() int64 { return event.Now() }
		flush := func(b *batch) {
			s.drainBefore(b, cutoff())
			if s.dec.Throttled && !throttled {
				throttled = true
				b.notices = append(b.notices, "the kernel throttled sampling (kernel.perf_cpu_time_max_percent); some samples are missing")
			}
			send(b)
		}
		// goAhead makes this thread real-time. A Python stack is read
		// when its sample is: on a busy machine this thread must not
		// wait for a CPU behind the targets, or the stacks read are no
		// longer the samples'. Per-CPU events fill the rings with every
		// process's samples, which the reader must drop before the
		// rings overflow. Ahead of the targets as ptrace's stoppers are
		// (yield.Ahead: real-time where gprof may, else nice -20 and the
		// short slice); it wakes every millisecond, or at each poll,
		// briefly. A real-time thread's poll must be raw (rawPoll; see
		// ptrace's sys.go for what Go's monitor thread does to a
		// real-time thread back from a system call), and then keeps its
		// P while it waits: one more for the rest of gprof.
		goAhead := func() {
			realtime = true
			unahead, _ := yield.Ahead(1)
			undoRealtime = unahead
			if s.pace == nil {
				old := runtime.GOMAXPROCS(0)
				runtime.GOMAXPROCS(old + 1)
				undoRealtime = func() {
					runtime.GOMAXPROCS(old)
					unahead()
				}
			}
		}
		if s.pace != nil {
			goAhead()
		}
		flush(first)
		if s.release != nil {
			// A launched command starts once the reader reads: released
			// first, it ran while gprof's own start (this goroutine's
			// thread, made real-time, the handler's first batch) waited
			// behind it for CPU, 10-30 ms on a 2-CPU VM, and its
			// samples piled up in the rings meanwhile. Released here, a
			// 64 ms program's longest gap between samples, median run,
			// went from 2.05 to 1.72 ms (16 interleaved runs).
			if s.prepared != nil {
				<-s.prepared
			}
			if s.touched != nil {
				<-s.touched
			}
			if s.releaseErr = s.release(); s.releaseErr != nil {
				reason <- stopCancelled
				return
			}
		}
		if realtime && !s.dec.interpSeen {
			// Real-time only to start: no Python stack is read yet (it
			// goes ahead again when one is), and the rings hold a
			// quarter second. A round of pacedReadMs preempted the
			// command at once, for up to a millisecond, where under the
			// normal policy it waits for the command's slice to end.
			undoRealtime()
			undoRealtime, realtime = nil, false
		}
		pfds := make([]unix.PollFd, 0, len(s.fds)+1)
		paced := map[int]bool{}
		if s.cgroup != nil && s.pace != nil {
			// Their pacers wake at each sample; the reader reads them
			// every pacedReadMs instead.
			for _, r := range s.ringList {
				paced[r.fd] = true
			}
		}
		for _, fd := range s.fds {
			if s.unpolled[fd] || paced[fd] || paced[s.outputTo[fd]] {
				// A CPU's probe (see openProbes), or a paced ring: per-CPU
				// events never hang up, and a paced ring wakes its
				// pollers every few samples, for its pacer. Polled with
				// no events asked, it woke the reader 500 times a second
				// for nothing, on the command's CPUs. Nor is an event
				// that writes into a paced ring polled (the side-band
				// events of --control and -D): a poll of any of a ring's
				// events takes the ring's wake-up, and the reader's
				// took every one, so that the pacers never woke and each
				// CPU's clock kept the period it had when sampling was
				// turned on (a launched command under -D -1 and
				// --control got 0.66 to 1.98 samples per ms of CPU time,
				// each run at a fixed spacing of its own).
				continue
			}
			pfds = append(pfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		}
		// With no event polled, the targets' end is only checked for
		// (anyPidAlive).
		polled := len(pfds) > 0
		why := stopCancelled
		lastCheck := time.Now()
		lastMaps := lastCheck
		var resched yield.Resched
		for {
			all := pfds
			if wake >= 0 {
				all = append(pfds, unix.PollFd{Fd: int32(wake), Events: unix.POLLIN})
			}
			timeout := pollTimeoutMs
			if len(paced) > 0 {
				timeout = pacedReadMs
			}
			if s.dec.interpSeen {
				// A Python stack is read as its sample is: the sooner,
				// the likelier it is still the sample's.
				timeout = 2
			}
			var err error
			if s.pace != nil || realtime {
				err = rawPoll(all, timeout)
			} else {
				_, err = unix.Poll(all, timeout)
			}
			if err != nil && err != unix.EINTR {
				time.Sleep(pollTimeoutMs * time.Millisecond)
			}
			// Drop events whose tasks (and inheritors) are all gone.
			live := pfds[:0]
			for _, p := range all[:len(pfds)] {
				if p.Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) == 0 {
					p.Revents = 0
					live = append(live, p)
				}
			}
			pfds = live
			applied := s.applyControl()
			flush(getBatch())
			if applied != nil {
				applied()
			}
			if realtime && resched.Due() {
				// The rings were just read: a late hand-back delays
				// no stack read that was due.
				resched.Pass()
			}
			if s.dec.interpSeen && !realtime {
				goAhead()
			}
			if ctx.Err() != nil {
				break
			}
			if polled && len(pfds) == 0 {
				why = stopExited
				break
			}
			// Belt and braces for kernels that do not report POLLHUP
			// once an inherited event's tasks are all gone.
			if len(s.threadMaps) > 0 && time.Since(lastMaps) >= mapsRescanPeriod {
				lastMaps = time.Now()
				b := getBatch()
				s.rescanMaps(b)
				flush(b)
			}
			// A process's end is checked for every half second, and as
			// soon as one that is followed has exited.
			if len(s.opts.Pids)+len(s.opts.Tids)+len(s.watch)+len(s.launched) > 0 && (time.Since(lastCheck) > 500*time.Millisecond || s.dec.procExited) {
				lastCheck = time.Now()
				s.dec.procExited = false
				if !s.anyPidAlive() {
					flush(getBatch())
					why = stopExited
					break
				}
			}
		}
		for _, fd := range s.fds {
			unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0)
		}
		stopped = event.Now()
		cutoff = func() int64 { return math.MaxInt64 }
		flush(getBatch())
		reason <- why
	}()
	handle := func(b *batch) {
		for _, n := range b.notices {
			notify(n)
		}
		for _, e := range b.events {
			h(e)
		}
		res.Lost += b.lost
		b.reset()
		select {
		case free <- b:
		default:
		}
	}
	// The first batches are held back (see holdFor).
	var held []*batch
	holdEnd := time.Now().Add(holdFor)
	holding := time.NewTimer(holdFor)
	defer holding.Stop()
	handleHeld := func() {
		for _, b := range held {
			handle(b)
		}
		held = nil
	}
	for batches != nil {
		select {
		case b, ok := <-batches:
			switch {
			case !ok:
				batches = nil
			case holdOn(time.Now(), holdEnd, len(free)):
				if s.opts.Ahead != nil {
					for _, e := range b.events {
						s.opts.Ahead(e)
					}
				}
				held = append(held, b)
			default:
				handleHeld()
				handle(b)
			}
		case <-holding.C:
			handleHeld()
		}
	}
	handleHeld()
	close(done)
	waker.Wait()
	if wake >= 0 {
		unix.Close(wake)
	}
	why := <-reason
	res.End = stopped
	return why
}

// anyPidAlive reports whether an attached pid still runs. Children that
// inherited events are not checked; POLLHUP covers them. Per-CPU events
// never hang up: then the processes the targets started count too, and
// a system-wide recording of a command ends with the command.
func (s *perfSession) anyPidAlive() bool {
	gone := func(pid int) bool {
		st := proc.ProcessState(pid)
		return st == 0 || st == 'Z' || st == 'X'
	}
	if s.watch != nil {
		return !slices.ContainsFunc(s.watch, gone)
	}
	if s.cgroup != nil {
		// No target filter follows the command's processes (the
		// kernel keeps the events to the cgroup): the cgroup says, or
		// where it cannot, the command itself.
		if populated, ok := s.cgroup.populated(); ok {
			return populated
		}
		for pid := range s.launched {
			if !gone(pid) {
				return true
			}
		}
		return false
	}
	if f := s.dec.filter; f != nil && !f.all {
		alive := false
		for _, pid := range f.followed() {
			if gone(pid) {
				f.forget(pid)
				s.filter.forget(pid)
			} else {
				alive = true
			}
		}
		if alive {
			return true
		}
	}
	for _, pid := range slices.Concat(s.opts.Pids, s.opts.Tids) {
		if st := proc.ProcessState(pid); st != 0 && st != 'Z' && st != 'X' {
			return true
		}
	}
	return false
}

func (s *perfSession) close() {
	for _, fd := range s.fds {
		unix.Close(fd)
	}
	s.fds = nil
	s.walker.close()
	s.walker = nil
	s.filter.close()
	s.filter = nil
	if s.dec != nil {
		s.dec.walker = nil
	}
	s.cgroup.remove()
	s.cgroup = nil
	if s.touched != nil {
		// Not unmapped under touchRings' reads, whatever ended the
		// session.
		<-s.touched
	}
	for _, r := range s.ringList {
		r.close()
	}
	s.ringList = nil
	s.rings = map[int]*ring{}
}
