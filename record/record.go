package record

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/symbolize/remote"
)

// Options configure a recording.
type Options struct {
	Attach attach.Options
	// Symbolize resolves every sampled address when recording ends and
	// stores the names in the profile.
	Symbolize  bool
	SymbolDirs []string
	// Remote fetches debug files this machine lacks (debuginfod); nil
	// fetches nothing.
	Remote *remote.Client
	// NoPython leaves CPython's eval function frames as they are, rather
	// than put the Python frames they ran in their place.
	NoPython bool
	// NoCounters turns off the per-process memory and CPU counters and
	// the measure of gprof's own overhead.
	NoCounters bool
	// MaxBytes and Keep bound a long recording: past MaxBytes of profile
	// data in memory, or for data older than Keep, the oldest samples are
	// discarded. Zero means no bound.
	MaxBytes int64
	Keep     time.Duration
	// Progress, when set, is called about four times a second from another
	// goroutine while recording.
	Progress func(Progress)
	// Phase, when set, hears about the steps after recording stops.
	Phase func(string)
	// Windows, when set, cuts the recording into windows (see Windows);
	// the profile Run returns is then the last one.
	Windows *Windows
}

// Progress is a live snapshot of a recording.
type Progress struct {
	Elapsed time.Duration
	Samples uint64
	Threads int
	Lost    uint64
}

// Result is a finished recording.
type Result struct {
	Profile  *profile.Profile
	Duration time.Duration
	// Samples counts the samples the profile holds, not those discarded.
	Samples   uint64
	Processes int
	Threads   int
	Lost      uint64
	// ExitCode is the launched command's exit status, or -1.
	ExitCode int
	// Discarded counts samples dropped to stay within MaxBytes or Keep.
	Discarded uint64
	// NoStackCPU is CPU time the profile counts (in its samples' CPU
	// deltas) that no sample's stack shows; NoStackReason says why.
	NoStackCPU     time.Duration
	NoStackReason  string
	Backend, Event string
	// Layout and Files: how the backend arranged its sampling and how
	// many files that took (attach.Result's), where it had a choice.
	Layout                string
	Files                 int
	SymbolicatedAddresses int
	// OffCPUSwitches counts the times threads went off the CPU (with
	// --off-cpu); OffCPUUnstacked those with no stack of their own.
	OffCPUSwitches, OffCPUUnstacked uint64
	// RejectedDebugFiles says which debug files were skipped as another
	// build's, one line each, for the user to hear of.
	RejectedDebugFiles []string
	// PythonSamples counts the samples given Python frames in place of
	// CPython's eval function; PythonUnread those in the eval function
	// left with their native frames, their Python stack unread or not
	// the sample's (see pyStage).
	PythonSamples, PythonUnread uint64
	// SampleRatio is the samples busy threads got over what the rate asks
	// for their CPU time, and SampleRatioMin the lowest of one thread;
	// both 0 when no thread was busy enough to tell (see rateCheck).
	SampleRatio, SampleRatioMin float64
}

// Run records until ctx is done or the targets exit, then builds the
// profile: libraries identified, names resolved (if asked).
func Run(ctx context.Context, opts Options) (*Result, error) {
	start := time.Now()
	t0 := event.Now()
	prof := &profile.Profile{Meta: hostMeta(start, opts)}
	b := newBuilder(t0, prof)
	b.bound = bound{maxBytes: opts.MaxBytes, keep: int64(opts.Keep)}
	if opts.MaxBytes > 0 {
		// A soft limit makes the garbage collector work harder, rather
		// than let the heap double, as the footprint nears the budget.
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		old := debug.SetMemoryLimit(int64(ms.Sys) + opts.MaxBytes)
		defer debug.SetMemoryLimit(old)
	}

	libs := newLibResolver(opts.SymbolDirs)
	libs.remote = opts.Remote
	defer libs.close()
	// Files can vanish with their process, so identify each binary as soon
	// as it is mapped, while /proc/PID/map_files still reaches it.
	b.onMap = libs.observe

	b.onProcessExit = libs.processExited
	var counters *counterSampler
	if probe := counterProbeFor(opts); probe != nil {
		// The Gecko sampler reads counters in the loop that samples its
		// threads; gprof's perf backend has no such loop (the kernel
		// samples), and a thread of its own waking at 1 kHz doubled the
		// kernel share of a CPU-bound target on a saturated machine (it
		// preempts the target). So counters are read every
		// counterPeriod, or at the interval when that is longer.
		counters = newCounterSampler(max(prof.Meta.Interval, counterPeriod), probe)
		b.onProcessStart = counters.started
		b.onProcessExit = func(pid int) {
			libs.processExited(pid)
			counters.exited(pid)
		}
		counters.start()
	}
	b.onTick = libs.tick
	// Samples that carry registers and a stack copy (dwarf mode, or the
	// ptrace backend whatever the mode) are unwound here.
	u := newUserUnwinder()
	u.jit = libs.jitDumpOf
	defer u.close()
	b.unwindUser = u.unwind
	if !opts.NoPython {
		b.py = newPyStage()
		opts.Attach.Interp, opts.Attach.InterpFind, opts.Attach.InterpWalk = b.py.read, b.py.find, b.py.walk
		opts.Attach.InterpFile = b.py.file
	}
	b.events = eventInfos(opts.Attach.Events)
	opts.Attach.Sampling = func(evs []attach.EventSpec) { b.events = eventInfos(evs) }
	b.switchesOnly = !opts.Attach.OffCPU
	if opts.Attach.Switches || opts.Attach.OffCPU {
		b.par = newParallelism(int64(prof.Meta.Interval) / 10)
	}

	var samples, lost atomic.Uint64
	var threads atomic.Int64
	handler := func(ev event.Event) {
		b.handle(ev)
		samples.Store(b.samples)
		lost.Store(b.lost)
		threads.Store(int64(b.threadCount))
	}
	if ctl := opts.Attach.Control; ctl != nil {
		tg := &toggles{c: ctl}
		inner := handler
		handler = func(ev event.Event) {
			tg.follow(b, event.EventTime(ev))
			inner(ev)
		}
		if counters != nil {
			// Calibration needs the scheduler's CPU time of the
			// sampled stretches alone.
			counters.uncalibrated = true
		}
	}
	// What cannot wait for the handler where the backend holds events
	// back (attach.Options.Ahead): a mapped file is opened, and its
	// unwind tables read, while its process lives (go test deletes its
	// test binaries as they exit), and a process's counters are read
	// from its start.
	ahead := func(ev event.Event) {
		pid := 0
		switch e := ev.(type) {
		case *event.Map:
			pid = e.Pid
			if !e.Data {
				b.onMap(e.Pid, e)
				u.preload(e)
			}
		case *event.Comm:
			pid = e.Pid
		case *event.Fork:
			pid = e.Pid
		}
		if pid != 0 && counters != nil {
			counters.started(pid)
		}
	}
	var win *windower
	if opts.Windows != nil {
		var mu sync.Mutex
		win = newWindower(opts.Windows, &mu, b, libs, opts, counters)
		inner := handler
		handler = func(ev event.Event) {
			mu.Lock()
			defer mu.Unlock()
			inner(ev)
			win.sampled()
		}
		innerAhead := ahead
		ahead = func(ev event.Event) {
			mu.Lock()
			defer mu.Unlock()
			innerAhead(ev)
		}
	}
	opts.Attach.Ahead = ahead

	done := make(chan struct{})
	if opts.Progress != nil {
		go func() {
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					opts.Progress(Progress{Elapsed: time.Since(start), Samples: samples.Load(),
						Threads: int(threads.Load()), Lost: lost.Load()})
				}
			}
		}()
	}
	// Read what a launched command maps first (its executable, loader
	// and libraries; every process's vdso) before it runs: read as its
	// first samples came, they took 1.8 ms on a 2-CPU VM, at the start of
	// a 64 ms program, on its CPU as often as not.
	for _, path := range attach.FirstMapped(opts.Attach) {
		libs.readAhead(path)
		u.u.ReadAhead(path)
	}
	u.u.ReadAhead("[vdso]")
	res, err := backendRecord(ctx, opts.Attach, handler)
	close(done)
	if win != nil {
		// What is left is the last window, Run's to finish as a
		// recording without windows.
		win.finish()
	}
	if counters != nil {
		counters.stop()
	}
	end := event.Now()
	if err != nil {
		return nil, err
	}
	if res.End > 0 && res.End < end {
		// Sampling stopped before a launched command was asked to end
		// and waited for: the profile ends with the sampling, but not
		// before it began (a window cut after the backend stopped, as
		// a SIGTERM came: the last window is then empty, not one that
		// ends before its start and is named before the one it follows).
		end = max(res.End, b.t0)
	}

	procs := b.finish(end)
	prof.Meta.Duration = end - b.t0
	if ctl := opts.Attach.Control; ctl != nil {
		prof.Meta.PausedRanges = pausedRanges(ctl, b.t0, end)
	}
	// The backend's total counts the same records it reported as Lost
	// events; it is the larger only for a backend that does not send them.
	prof.Meta.LostEvents = max(b.lost, res.Lost)
	prof.Meta.Extra["backend"] = res.Backend
	prof.Meta.Extra["event"] = res.Event
	// What the samples measure, in so many words: the categories of a
	// Python recording include those of off-CPU samples whether or not
	// any were taken.
	prof.Meta.Extra[profile.ExtraOffCPU] = fmt.Sprint(b.offCPU)
	out := &Result{
		Profile: prof, Duration: time.Duration(end - t0), Samples: b.samples - b.bound.discarded,
		Lost: prof.Meta.LostEvents, ExitCode: res.ExitCode, Backend: res.Backend, Event: res.Event,
		NoStackCPU: res.NoStackCPU, NoStackReason: res.NoStackReason,
		Layout: res.Layout, Files: res.Files,
	}
	if res.Layout != "" {
		prof.Meta.Extra["event_layout"] = res.Layout
	}
	if res.NoStackCPU > 0 {
		prof.Meta.Extra["no_stack_cpu_ms"] = fmt.Sprintf("%.1f", res.NoStackCPU.Seconds()*1000)
		prof.Meta.Extra["no_stack_reason"] = res.NoStackReason
	}
	for _, pr := range procs {
		pr.p.Libs = libs.libsFor(pr)
		prof.Processes = append(prof.Processes, pr.p)
		out.Threads += len(pr.p.Threads)
	}
	if counters != nil {
		counters.attach(prof, b.t0)
	}
	b.finishEvents(opts.Attach.Notice)
	b.par.attach(t0)
	if b.offCPU {
		prof.Meta.Extra["offcpu_switches"] = fmt.Sprint(b.switches)
		prof.Meta.Extra["offcpu_unstacked"] = fmt.Sprint(b.unstacked)
		out.OffCPUSwitches, out.OffCPUUnstacked = b.switches, b.unstacked
		if b.unstacked > 0 && opts.Attach.Notice != nil {
			opts.Attach.Notice(fmt.Sprintf("%d of %d waits off the CPU had no stack of their own (capped by --off-cpu-cap, not permitted, or dropped with a full ring); they are shown at the thread's previous stack",
				b.unstacked, b.switches))
		}
	}
	interval := res.Interval
	if interval <= 0 {
		interval = prof.Meta.Interval
	}
	for k, v := range res.Stats {
		prof.Meta.Extra[k] = v
	}
	if sr := b.rate.result(interval); sr.Busy > 0 {
		out.SampleRatio, out.SampleRatioMin = sr.Ratio, sr.Min
		prof.Meta.Extra["sample_ratio"] = fmt.Sprintf("%.3f", sr.Ratio)
		if msg := sr.shortfall(res.Backend, interval, res.RateAdvice); msg != "" && opts.Attach.Notice != nil {
			opts.Attach.Notice(msg)
		}
	}
	if n := u.cutShort; n >= 10 && n*100 >= u.stacks && opts.Attach.Notice != nil {
		opts.Attach.Notice(fmt.Sprintf("%d of %d stacks (%.1f%%) stop where the %d-byte stack copy ends, short of the outermost frame; --stack-size 64K copies more (the kernel's limit), at a higher cost per sample",
			n, u.stacks, 100*float64(n)/float64(u.stacks), u.copySize))
	}
	if ps := b.py; ps != nil && ps.samples > 0 {
		out.PythonSamples, out.PythonUnread = ps.merged, ps.samples-ps.merged
		prof.Meta.Extra["python_samples"] = fmt.Sprint(ps.merged)
		prof.Meta.Extra["python_unread"] = fmt.Sprint(ps.unread)
		prof.Meta.Extra["python_stale"] = fmt.Sprint(ps.stale)
		if ps.stale*100 >= ps.samples && ps.stale >= 10 && opts.Attach.Notice != nil {
			opts.Attach.Notice(pythonShortfall(ps, res.Backend))
		}
	}
	// Exec images count once: the same count report prints.
	out.Processes = prof.ProcessCount()
	if len(opts.Attach.Command) > 0 && len(procs) > 0 {
		// The launched command is the first process; after any execs, its
		// status belongs to the last program that ran under its pid.
		pid := procs[0].p.Pid
		for i := len(procs) - 1; i >= 0; i-- {
			if procs[i].p.Pid == pid {
				procs[i].p.ExitCode = res.ExitCode
				break
			}
		}
	}
	if b.bound.discarded > 0 {
		prof.Meta.DataStart = b.bound.discardedBefore
		out.Discarded = b.bound.discarded
		prof.Meta.Extra["discarded_samples"] = fmt.Sprint(b.bound.discarded)
	}
	if opts.Attach.Kernel {
		addKernelLib(prof)
	}
	if opts.Symbolize {
		if opts.Phase != nil {
			opts.Phase("resolving names")
		}
		st, err := libs.symbolize(prof)
		if err != nil && opts.Attach.Notice != nil {
			opts.Attach.Notice(fmt.Sprintf("some names could not be resolved: %v", err))
		}
		out.SymbolicatedAddresses = st.Resolved
		out.RejectedDebugFiles = st.RejectedDebugFiles()
		if msg := unnamedJIT(prof); msg != "" && opts.Attach.Notice != nil {
			opts.Attach.Notice(msg)
		}
	}
	nameWaits(prof, b.waits)
	return out, nil
}

// hostMeta describes this machine for the profile header.
func hostMeta(start time.Time, opts Options) profile.Meta {
	interval := opts.Attach.Interval
	if interval <= 0 {
		interval = time.Millisecond
	}
	m := profile.Meta{
		Product:     "gprof",
		StartTime:   start,
		Interval:    interval,
		Platform:    platformName(),
		Arch:        archName(),
		LogicalCPUs: runtime.NumCPU(),
		CPUName:     cpuName(),
		OSCPU:       osDescription(),
		Extra:       map[string]string{},
	}
	if len(opts.Attach.Command) > 0 {
		m.Extra["command"] = fmt.Sprint(opts.Attach.Command)
	}
	if opts.Attach.SystemWide {
		// The latency view counts each process's parallelism apart.
		m.Extra["system_wide"] = "true"
	}
	if h, err := os.Hostname(); err == nil {
		m.Extra["host"] = h
	}
	return m
}

// counterPeriod is the shortest time between two readings of counters.
const counterPeriod = 10 * time.Millisecond

// counterProbeFor returns the probe counters are read with, or nil when
// they are not wanted or cannot be read here.
func counterProbeFor(opts Options) counterProbe {
	if opts.NoCounters {
		return nil
	}
	return newCounterProbe()
}

// backendRecord is attach.Record; tests replace it with a scripted backend.
var backendRecord = attach.Record
