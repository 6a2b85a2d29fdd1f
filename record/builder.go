// Package record turns a backend's event stream into a profile: it tracks
// processes, threads and their mappings, unwinds user stacks when the
// backend hands over stack copies, and interns samples into the model.
package record

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/profile"
)

// mapping is one executable mapping seen in a process.
type mapping struct {
	event.Map
	// unmap marks an event.Unmap of [Start, End): the unwinder forgets
	// the range, but libraries keep it for samples taken before.
	unmap bool
	// samples is how many samples the process had when it was mapped.
	samples int
}

// proc is a process as the builder tracks it. Its lifetime and its
// threads' are model times (Start, End); writers derive start and exit
// markers from them. A process that execs after it was sampled becomes a
// new proc, marked as an exec image of the same OS process (the old
// address space and name no longer apply).
type proc struct {
	p        *profile.Process
	threads  map[int]*profile.Thread
	mappings []mapping // in arrival order; later mappings win on overlap
	mapGen   int       // bumped when mappings are reset (exec)
	named    bool      // name came from argv or an exec, not a guess
	sampled  bool
	samples  int // how many samples it has had
	// execTid is the thread that exec'd the image, until it is sampled
	// in the image's code (see staleExec); 0 otherwise.
	execTid int
}

// builder consumes attach events in nearly time order. It is used from one
// goroutine only (event.Handler's contract).
type builder struct {
	t0      int64 // monotonic ns of time zero
	profile *profile.Profile
	procs   map[int]*proc // live process per pid
	// dying holds, per pid, the process whose main thread exited last,
	// until another process takes the pid: its other threads may still
	// be sampled on their way out (exit_group ends the leader first).
	dying map[int]*proc
	all   []*proc // every process ever seen, in order of appearance

	samples     uint64
	lost        uint64
	threadCount int

	// onMap, when set, sees every mapping as it arrives.
	onMap func(pid int, m *event.Map)
	// onProcessStart, when set, runs when a pid is first seen.
	onProcessStart func(pid int)
	// onProcessExit, when set, runs when a process's main thread exits,
	// while what it leaves behind (a JIT map) may still be there.
	onProcessExit func(pid int)
	// onTick, when set, runs about every tickEvery ns of event time.
	onTick   func()
	lastTick int64

	// unwindUser, when set, replaces the user part of a sample's stack
	// (for backends that deliver registers and a stack copy).
	unwindUser func(pr *proc, s *event.Sample, out []uint64) []uint64

	// label, when set, names user frames that no image holds (methods a
	// JIT compiled, as a trace's runtime events name them): such a frame
	// is a label rather than an address.
	label func(pid int, addr uint64) (string, bool)

	bound bound

	// off tracks threads off the CPU (see offcpu.go); offCPU is set once
	// a switch was seen, offSamples counts the samples made of them.
	off        map[*profile.Thread]*offState
	offCPU     bool
	offSamples uint64
	waits      []waitRef // markers of long waits, to name (nameWaits)
	// switches counts switches out; unstacked those without a stack of
	// their own (beyond the backend's cap), shown at the previous one.
	switches, unstacked uint64

	// rate counts each thread's samples and CPU time (see rateCheck).
	rate rateCheck

	// events describes the recording's events, by event.Sample.Event
	// (see events.go); nil for one clock. traceMarkers counts the markers
	// made of tracepoint hits, traceUnmarked the hits past the bound.
	events                      []EventInfo
	traceMarkers, traceUnmarked uint64
	// switchesOnly: context switches are for parallelism alone, with no
	// off-CPU samples made of them. par counts each process's threads on
	// a CPU (see parallel.go); nil when not asked for.
	switchesOnly bool
	par          *parallelism
	// markerFiles are the marker files the processes mapped (see
	// markers.go).
	markerFiles []markerFile

	// py, when set, puts Python frames in place of the interpreter's
	// (see python.go); python is set once it has.
	py     *pyStage
	python bool
	pyOut  []profile.Frame // scratch

	frames []profile.Frame // scratch, reused per sample
	addrs  []uint64        // scratch
}

func newBuilder(t0 int64, p *profile.Profile) *builder {
	return &builder{t0: t0, profile: p, procs: make(map[int]*proc), dying: make(map[int]*proc)}
}

func (b *builder) rel(t int64) int64 {
	if t < b.t0 {
		return 0
	}
	return t - b.t0
}

// process returns the live process for pid, creating it if needed.
func (b *builder) process(pid int, t int64) *proc {
	if pr := b.procs[pid]; pr != nil {
		return pr
	}
	pr := &proc{
		p:       &profile.Process{Pid: pid, Start: b.rel(t), End: -1, ExitCode: -1},
		threads: make(map[int]*profile.Thread),
	}
	delete(b.dying, pid)
	b.procs[pid] = pr
	b.all = append(b.all, pr)
	if b.onProcessStart != nil {
		b.onProcessStart(pid)
	}
	return pr
}

// live returns the process that pid is now: the live one, else the one
// whose main thread exited last (its other threads end after the leader,
// and what they do on their way out is still that process's: a record of
// them, even of a thread not seen before, must not start a new process
// with no name), else a new one. Only a fork or an exec starts a process
// on a pid that is dying.
func (b *builder) live(pid int, t int64) *proc {
	if pr := b.procs[pid]; pr != nil {
		return pr
	}
	if d := b.dying[pid]; d != nil {
		if end := b.rel(t); end > d.p.End {
			d.p.End = end
		}
		return d
	}
	return b.process(pid, t)
}

// thread returns the live thread tid of pr, creating it if needed.
func (b *builder) thread(pr *proc, tid int, t int64) *profile.Thread {
	if th := pr.threads[tid]; th != nil {
		return th
	}
	th := &profile.Thread{Tid: tid, Main: tid == pr.p.Pid, Start: b.rel(t), End: -1}
	pr.threads[tid] = th
	pr.p.Threads = append(pr.p.Threads, th)
	b.threadCount++
	return th
}

// tickEvery is how often (in event time) onTick runs.
const tickEvery = 250e6

func (b *builder) handle(ev event.Event) {
	if b.onTick != nil {
		if t := event.EventTime(ev); t-b.lastTick >= tickEvery {
			b.lastTick = t
			b.onTick()
		}
	}
	switch e := ev.(type) {
	case *event.Sample:
		b.sample(e)
	case *event.Map:
		if e.Data {
			b.markerFileMapped(e)
			return
		}
		pr := b.live(e.Pid, e.Time)
		m := mapping{Map: *e, samples: pr.samples}
		m.BuildID = append([]byte(nil), e.BuildID...)
		pr.mappings = append(pr.mappings, m)
		if b.onMap != nil {
			b.onMap(e.Pid, &m.Map)
		}
	case *event.Unmap:
		pr := b.live(e.Pid, e.Time)
		// An image unloaded before any sample of its process landed
		// (Windows maps DLLs as data, to read their resources) was no
		// sample's: its lib would only hide the one loaded there later.
		for i := len(pr.mappings) - 1; i >= 0; i-- {
			if m := &pr.mappings[i]; !m.unmap && m.Start == e.Start && m.End == e.End {
				if m.samples == pr.samples {
					pr.mappings = append(pr.mappings[:i], pr.mappings[i+1:]...)
				}
				break
			}
		}
		pr.mappings = append(pr.mappings, mapping{Map: event.Map{Time: e.Time, Pid: e.Pid, Start: e.Start, End: e.End}, unmap: true})
	case *event.Comm:
		b.comm(e)
	case *event.Fork:
		b.fork(e)
	case *event.Exit:
		b.exit(e)
	case *event.Lost:
		b.lost += e.Count
	case *event.Switch:
		b.contextSwitch(e)
	}
}

func (b *builder) comm(e *event.Comm) {
	pr := b.live(e.Pid, e.Time)
	if e.Exec {
		// The new image's mappings are those reported at or after the
		// exec; anything earlier belonged to the old program (for a
		// launched command, gprof's own helper).
		var fresh []mapping
		for _, m := range pr.mappings {
			if m.Time >= e.Time {
				fresh = append(fresh, m)
			}
		}
		if pr.sampled {
			// Keep what was sampled under the old program and start a
			// fresh image of the same OS process (profile.Process.Exec).
			b.endProcess(pr, e.Time)
			delete(b.procs, e.Pid)
			pr = b.process(e.Pid, e.Time)
			pr.p.Exec = true
		}
		pr.mappings = fresh
		pr.mapGen++
		pr.named = false
		pr.execTid = e.Tid
	}
	th := b.thread(pr, e.Tid, e.Time)
	th.Name = e.Name
	switch {
	case len(e.Argv) > 0 && e.Argv[0] != "" && (e.Tid == e.Pid || !pr.named):
		// Any thread's command line names its process: a thread recorded
		// alone (-t) is the only thread its process has in the profile.
		pr.p.Name = filepath.Base(e.Argv[0])
		pr.named = true
	case e.Tid == e.Pid && (!pr.named || e.Exec):
		pr.p.Name = e.Name
		pr.named = e.Exec
	}
}

func (b *builder) fork(e *event.Fork) {
	if e.NewThread() {
		pr := b.live(e.Pid, e.Time)
		th := b.thread(pr, e.Tid, e.Time)
		if parent := pr.threads[e.Ptid]; parent != nil && th.Name == "" {
			th.Name = parent.Name // Linux threads inherit the comm
		}
		return
	}
	// A new process starts as a copy of its parent's address space; no
	// mapping records are sent for what it inherits.
	parent := b.procs[e.Ppid]
	pr := b.process(e.Pid, e.Time)
	if parent != nil {
		pr.mappings = append(pr.mappings[:0], parent.mappings...)
		pr.p.Name = parent.p.Name
		if pth := parent.threads[e.Ptid]; pth != nil {
			b.thread(pr, e.Tid, e.Time).Name = pth.Name
		}
	}
	b.thread(pr, e.Tid, e.Time)
}

func (b *builder) exit(e *event.Exit) {
	pr := b.procs[e.Pid]
	if pr == nil {
		return
	}
	if th := pr.threads[e.Tid]; th != nil && th.End < 0 {
		b.flushOff(th, b.off[th], e.Time)
		th.End = b.rel(e.Time)
	}
	b.par.set(pr, e.Tid, false, e.Time)
	if e.Tid == e.Pid {
		if e.ExitKnown {
			pr.p.ExitCode = e.ExitCode
		}
		if b.onProcessExit != nil {
			b.onProcessExit(e.Pid)
		}
		b.readMarkerFiles(pr)
		b.endProcess(pr, e.Time)
		delete(b.procs, e.Pid)
		b.dying[e.Pid] = pr
		if b.py != nil {
			// What the reader knew of the process (its interpreter,
			// code objects, thread states) goes with it: the pid may be
			// reused, and a build of a thousand processes would keep
			// them all.
			b.py.reader.Forget(e.Pid)
		}
	}
}

func (b *builder) endProcess(pr *proc, t int64) {
	if pr.p.End >= 0 {
		return
	}
	b.par.end(pr, t)
	pr.p.End = b.rel(t)
	for _, th := range pr.p.Threads {
		if th.End < 0 {
			b.flushOff(th, b.off[th], t)
			th.End = pr.p.End
		}
	}
}

func (b *builder) sample(s *event.Sample) {
	pr := b.live(s.Pid, s.Time)
	th := b.thread(pr, s.Tid, s.Time)
	if pr.p.End >= 0 {
		// A thread of a process whose main thread has exited, on its
		// way out (see live).
		th.End = max(th.End, b.rel(s.Time))
	}
	pr.sampled = true
	if !s.Switch {
		b.samples++
		pr.samples++
	}

	addrs := b.addrs[:0]
	if s.Regs != nil && b.unwindUser != nil {
		addrs = append(addrs, s.Stack[:s.KernelFrames]...)
		addrs = b.unwindUser(pr, s, addrs)
	} else {
		addrs = append(addrs, s.Stack...)
	}
	stale := pr.staleExec(s, addrs)
	if stale {
		addrs = addrs[:s.KernelFrames]
	}
	b.addrs = addrs

	if !s.Switch {
		b.par.set(pr, s.Tid, true, s.Time)
	}
	eventSample := b.isEventSample(s)
	frames := b.frames[:0]
	if s.InKernel && s.KernelFrames == 0 && !s.Switch && !eventSample {
		// In the kernel, whose stack was not asked for (or not
		// permitted): one frame stands for it, above the user stack
		// that entered it.
		frames = append(frames, profile.Frame{Label: profile.KernelLabel, Category: profile.CategoryKernel})
	}
	for i, a := range addrs {
		c := profile.CategoryUser
		if i < s.KernelFrames || s.KernelFrom != 0 && a >= s.KernelFrom {
			c = profile.CategoryKernel
		} else if b.label != nil {
			if name, ok := b.label(s.Pid, a); ok {
				frames = append(frames, profile.Frame{Label: name, Category: c})
				continue
			}
		}
		frames = append(frames, profile.Frame{Address: a, Category: c})
	}
	if s.InKernel && !s.Switch && !eventSample && len(addrs) == s.KernelFrames {
		// A user process's thread in the kernel with no user stack
		// below, for a reason known: in an exec (above), or in its exit
		// (the kernel gave no user registers, and the process has
		// mappings: a kernel thread has none, and no user stack to
		// miss). A stand-in says which, where the user stack would be.
		// (A backend whose user part just did not come, an ETW stack
		// walk say, keeps the kernel's frames at the root.)
		switch {
		case stale:
			frames = append(frames, profile.Frame{Label: profile.ExecLabel, Category: profile.CategoryOther})
		case s.NoUserRegs && s.Pid > 0 && len(pr.mappings) > 0:
			frames = append(frames, profile.Frame{Label: profile.ExitLabel, Category: profile.CategoryOther})
		}
	}
	if eventSample {
		b.frames = frames
		b.eventSample(th, s, frames)
		return
	}
	if b.py != nil && !s.Switch {
		var merged bool
		if frames, b.pyOut, merged = b.py.merge(s, frames, b.pyOut, pr.fileBacked); merged {
			b.python = true
		}
	}
	b.frames = frames
	if s.Switch {
		b.switchSample(pr, th, frames)
		return
	}
	now := b.rel(s.Time)
	b.rate.add(th, s.Pid, s.Tid, s.CPUDelta)
	th.Samples.Add(th.InternStack(frames), now, s.CPUDelta)
	b.bound.after(b, now)
}

// finish closes the profile at monotonic time end and returns the processes
// in order of appearance, dropping processes that never ran a sampled or
// named thread (for example gprof's own launch helper before exec).
func (b *builder) finish(end int64) []*proc {
	b.flushAllOff(end)
	b.par.finish(end)
	for _, pr := range b.all {
		b.readMarkerFiles(pr)
	}
	if b.offCPU {
		b.profile.Meta.Categories = profile.OffCPUCategories
	}
	if b.python {
		b.profile.Meta.Categories = profile.PythonCategories
	}
	var out []*proc
	for _, pr := range b.all {
		if pr.p.End >= 0 && pr.p.End > b.rel(end) {
			pr.p.End = b.rel(end)
		}
		if len(pr.p.Threads) == 0 {
			continue
		}
		sort.SliceStable(pr.p.Threads, func(i, j int) bool {
			a, c := pr.p.Threads[i], pr.p.Threads[j]
			if a.Main != c.Main {
				return a.Main
			}
			return false
		})
		// Every process and thread has a name: one whose records
		// named it not (a thread seen only on its way out) takes its
		// process's, a process its threads' first.
		for _, th := range pr.p.Threads {
			if pr.p.Name == "" {
				pr.p.Name = th.Name
			}
		}
		for _, th := range pr.p.Threads {
			if th.Name == "" {
				th.Name = pr.p.Name
			}
		}
		out = append(out, pr)
	}
	return out
}

// staleExec reports whether a sample of a thread in the kernel, in an
// execve that has replaced its address space but not yet its registers,
// shows the old program's user stack: the kernel enables a launched
// command's events at its exec (enable_on_exec) and goes on loading the
// new program for a while, and a sample then has the old user address
// (gprof's launch helper's, in none of the new image's mappings). That
// time is the kernel's, in the exec; the user part is dropped. The first
// sample of the thread in the new image's code ends the check.
func (pr *proc) staleExec(s *event.Sample, addrs []uint64) bool {
	if pr.execTid != s.Tid || s.Switch {
		return false
	}
	if !s.InKernel || len(addrs) <= s.KernelFrames || pr.mapped(addrs[s.KernelFrames]) {
		pr.execTid = 0
		return false
	}
	return true
}

// mapped reports whether addr is in a mapping of the process.
func (pr *proc) mapped(addr uint64) bool {
	for i := len(pr.mappings) - 1; i >= 0; i-- {
		if m := &pr.mappings[i]; addr >= m.Start && addr < m.End {
			return !m.unmap
		}
	}
	return false
}

// fileBacked reports whether addr is in a mapping of a file (not
// anonymous memory, a JIT's).
func (pr *proc) fileBacked(addr uint64) bool {
	for i := len(pr.mappings) - 1; i >= 0; i-- {
		if m := &pr.mappings[i]; addr >= m.Start && addr < m.End {
			// perf names anonymous memory "//anon"; a JIT may map a
			// memfd.
			return !m.unmap && strings.HasPrefix(m.Path, "/") && !strings.HasPrefix(m.Path, "//") && !strings.HasPrefix(m.Path, "/memfd:")
		}
	}
	return false
}
