package record

import (
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/symbolize"
)

// Windows cut a long recording into windows (record --switch-output): at
// each cut the builder hands what it holds over as a profile of its own,
// complete (processes, threads, libraries, counters, paused ranges) and
// with its names resolved, and starts the next window empty, so that a
// recording's memory is bounded by one window. Times in each window count
// from its own start.
//
// The builder is used from the backend's goroutine (the handler) and, at a
// cut, from the windows' goroutine: mu guards it. A cut moves the data
// out, which takes a moment; names are resolved after, with the builder
// free again, under libsMu, which guards what the resolver learns while
// recording (the binaries opened, the JIT maps read).
type Windows struct {
	// Every closes a window after this long; 0: not by time.
	Every time.Duration
	// Size closes a window once its data passes this many bytes (the
	// model's estimate of its size in memory); 0: not by size.
	Size int64
	// Cut asks for the window to close now (SIGUSR2, a control FIFO's
	// "snapshot"); the channel it sends, when not nil, is closed once
	// Write has returned. Nil when only Every and Size close windows.
	Cut <-chan chan struct{}
	// Keep makes each Cut a snapshot: the profile so far is handed over
	// and the recording keeps it, as it would without windows.
	Keep bool
	// Write receives each window as it closes, but the last one, which
	// Run returns: one at a time, in order, on a goroutine of Run's, while
	// the recording goes on.
	Write func(Window)
}

// Window is one closed window.
type Window struct {
	Profile *profile.Profile
	// Seq numbers the windows from 1.
	Seq int
	// Start and End are the window's wall-clock bounds.
	Start, End time.Time
	// Samples counts its samples.
	Samples uint64
}

// windower closes the windows of a recording.
type windower struct {
	w       *Windows
	mu      *sync.Mutex // guards the builder
	libsMu  sync.Mutex  // guards the resolver's state (see Windows)
	b       *builder
	libs    *libResolver
	opts    Options
	counter *counterSampler
	seq     int
	// names are the names earlier windows resolved (see nameCache).
	names nameCache
	// sizeCheck counts samples since the size was last checked.
	sizeCheck uint64
	cut       chan struct{} // a cut is due (size)
	stop      chan struct{}
	done      chan struct{}
}

// sizeCheckEvery is how many samples apart a window's size is checked:
// the check walks every thread.
const sizeCheckEvery = 512

func newWindower(w *Windows, mu *sync.Mutex, b *builder, libs *libResolver, opts Options, counter *counterSampler) *windower {
	ww := &windower{w: w, mu: mu, b: b, libs: libs, opts: opts, counter: counter,
		cut: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	// The resolver learns of new binaries and processes from the handler
	// while a window's names are being resolved.
	observe, exited, tick := b.onMap, b.onProcessExit, b.onTick
	b.onMap = func(pid int, m *event.Map) {
		ww.libsMu.Lock()
		defer ww.libsMu.Unlock()
		observe(pid, m)
	}
	b.onProcessExit = func(pid int) {
		ww.libsMu.Lock()
		defer ww.libsMu.Unlock()
		exited(pid)
	}
	b.onTick = func() {
		// Rereading JIT maps can wait for the next tick.
		if ww.libsMu.TryLock() {
			defer ww.libsMu.Unlock()
			tick()
		}
	}
	if counter != nil {
		counter.windowed = true
	}
	go ww.run()
	return ww
}

// sampled is called, with mu held, after each event: it asks for a cut
// when the window has grown past Size.
func (ww *windower) sampled() {
	if ww.w.Size <= 0 || ww.b.samples-ww.sizeCheck < sizeCheckEvery {
		return
	}
	ww.sizeCheck = ww.b.samples
	if ww.b.bound.size(ww.b) >= ww.w.Size {
		select {
		case ww.cut <- struct{}{}:
		default:
		}
	}
}

func (ww *windower) run() {
	defer close(ww.done)
	var every <-chan time.Time
	var t *time.Timer
	if ww.w.Every > 0 {
		t = time.NewTimer(ww.w.Every)
		defer t.Stop()
		every = t.C
	}
	for {
		var written chan struct{}
		select {
		case <-ww.stop:
			return
		case <-every:
		case <-ww.cut:
		case written = <-ww.w.Cut:
		}
		cutAt := time.Now()
		win := ww.close(ww.w.Keep)
		if win != nil {
			ww.w.Write(*win)
		}
		if t != nil {
			// The next window is Every long from this cut, however
			// long closing this one took.
			t.Reset(max(ww.w.Every-time.Since(cutAt), 0))
		}
		if written != nil {
			close(written)
		}
		// Cuts asked for while this one was written were for it.
		select {
		case <-ww.cut:
		default:
		}
	}
}

// finish stops cutting windows: the rest is Run's last profile.
func (ww *windower) finish() {
	close(ww.stop)
	<-ww.done
}

// close closes the window now, or with keep hands over a copy of it.
func (ww *windower) close(keep bool) *Window {
	ww.mu.Lock()
	b := ww.b
	end := event.Now()
	t0 := b.t0
	start := b.profile.Meta.StartTime
	p, procs := b.cut(end, keep)
	ww.libsMu.Lock()
	defer ww.libsMu.Unlock()
	for i, wp := range p.Processes {
		wp.Libs = ww.libs.libsFor(procs[i])
	}
	if c := ww.opts.Attach.Control; c != nil {
		p.Meta.PausedRanges = pausedRanges(c, t0, end)
	}
	if ww.counter != nil {
		ww.counter.window(p, t0, end, keep)
	}
	waits := b.waits
	if !keep {
		b.waits = nil
	}
	// Runtimes write their JIT maps as they go: read what came, while
	// no sample is being unwound with them.
	for pid := range ww.libs.jitDumps {
		ww.libs.refreshJITDump(pid)
	}
	ww.mu.Unlock()

	if ww.opts.Attach.Kernel {
		addKernelLib(p)
	}
	if ww.opts.Symbolize {
		ww.names.fill(p)
		if _, err := ww.libs.symbolizeNow(p); err != nil && ww.opts.Attach.Notice != nil {
			ww.opts.Attach.Notice("some names could not be resolved: " + err.Error())
		}
		ww.names.learn(p)
	}
	nameWaits(p, waits)
	if !hasThreads(p) {
		// Nothing ran in it (the targets had exited): no profile.
		return nil
	}
	ww.seq++
	win := &Window{Profile: p, Seq: ww.seq, Start: start, End: start.Add(time.Duration(end - t0))}
	for _, pr := range p.Processes {
		for _, th := range pr.Threads {
			win.Samples += uint64(th.Samples.Len())
		}
	}
	return win
}

// cut hands over what the builder holds up to monotonic time end as a
// profile of its own, with the processes it came from (for their
// libraries); without keep, the builder then starts afresh from end,
// keeping only the processes and threads still alive, with their
// mappings and names.
func (b *builder) cut(end int64, keep bool) (*profile.Profile, []*proc) {
	b.splitOff(end)
	p := &profile.Profile{Meta: b.profile.Meta}
	p.Meta.Extra = maps.Clone(b.profile.Meta.Extra)
	p.Meta.Duration = b.rel(end)
	if b.offCPU {
		p.Meta.Categories = profile.OffCPUCategories
	}
	if b.python {
		p.Meta.Categories = profile.PythonCategories
	}
	var procs []*proc
	for _, pr := range b.all {
		if len(pr.p.Threads) == 0 {
			continue
		}
		wp := *pr.p
		wp.Threads = make([]*profile.Thread, 0, len(pr.p.Threads))
		for _, th := range pr.p.Threads {
			wt := &profile.Thread{Tid: th.Tid, Name: th.Name, Main: th.Main, Start: th.Start, End: th.End}
			if keep {
				copyTables(wt, th)
			} else {
				wt.Frames, wt.Stacks, wt.Samples, wt.Markers = th.Frames, th.Stacks, th.Samples, th.Markers
				th.Frames, th.Stacks, th.Samples, th.Markers = profile.FrameTable{}, profile.StackTable{}, profile.SampleTable{}, nil
			}
			wp.Threads = append(wp.Threads, wt)
		}
		sort.SliceStable(wp.Threads, func(i, j int) bool { return wp.Threads[i].Main && !wp.Threads[j].Main })
		if wp.Name == "" {
			wp.Name = wp.Threads[0].Name
		}
		if wp.End > p.Meta.Duration {
			wp.End = p.Meta.Duration
		}
		wp.Counters = nil
		p.Processes = append(p.Processes, &wp)
		procs = append(procs, pr)
	}
	if !keep {
		b.rebase(end)
	}
	return p, procs
}

// copyTables gives to a copy of th's tables.
func copyTables(to, th *profile.Thread) {
	to.Frames.Frames = slices.Clone(th.Frames.Frames)
	to.Stacks.Prefix = slices.Clone(th.Stacks.Prefix)
	to.Stacks.Frame = slices.Clone(th.Stacks.Frame)
	s := &th.Samples
	to.Samples = profile.SampleTable{Stack: slices.Clone(s.Stack), Time: slices.Clone(s.Time),
		CPUDelta: slices.Clone(s.CPUDelta), Weight: slices.Clone(s.Weight)}
	to.Markers = slices.Clone(th.Markers)
}

// splitOff samples every stretch off the CPU going on up to monotonic time
// t, and lets it go on from there.
func (b *builder) splitOff(t int64) {
	for th, st := range b.off {
		if st.offAt >= 0 && st.offAt < t && th.End < 0 {
			b.flushOff(th, st, t)
			st.offAt = t
		}
	}
}

// rebase starts the next window at monotonic time end: times count from
// there; what ended is dropped (its window has it).
func (b *builder) rebase(end int64) {
	shift := end - b.t0
	b.t0 = end
	b.profile.Meta.StartTime = b.profile.Meta.StartTime.Add(time.Duration(shift))
	kept := b.all[:0]
	for _, pr := range b.all {
		if b.procs[pr.p.Pid] != pr {
			continue // ended, or an earlier image of an exec'd process
		}
		pr.p.Start = max(pr.p.Start-shift, 0)
		threads := pr.p.Threads[:0]
		for _, th := range pr.p.Threads {
			if th.End >= 0 {
				if pr.threads[th.Tid] == th {
					delete(pr.threads, th.Tid)
				}
				delete(b.off, th)
				continue
			}
			th.Start = max(th.Start-shift, 0)
			threads = append(threads, th)
		}
		clear(pr.p.Threads[len(threads):])
		pr.p.Threads = threads
		kept = append(kept, pr)
	}
	clear(b.all[len(kept):])
	b.all = kept
	for pid, d := range b.dying {
		// Late samples of a process that ended go to no window.
		for _, th := range d.p.Threads {
			th.Frames, th.Stacks, th.Samples, th.Markers = profile.FrameTable{}, profile.StackTable{}, profile.SampleTable{}, nil
			delete(b.off, th)
		}
		delete(b.dying, pid)
	}
	b.bound.discardedBefore, b.bound.lastCheck = 0, 0
}

// window gives the processes of window p (whose time zero is monotonic
// t0, its end end) their counters and p its overhead, then, without keep,
// forgets the readings before end.
func (c *counterSampler) window(p *profile.Profile, t0, end int64, keep bool) {
	c.mu.Lock()
	live := maps.Clone(c.live)
	c.mu.Unlock()
	c.seriesMu.Lock()
	defer c.seriesMu.Unlock()
	in := func(t int64) bool { return t >= t0 && t <= end }
	w := &counterSampler{probe: c.probe, series: map[int]*procSeries{}, power: map[string][]float64{}, uncalibrated: true}
	for pid, s := range c.series {
		var ws procSeries
		for i, t := range s.time {
			if in(t) {
				ws.time = append(ws.time, t)
				ws.rss = append(ws.rss, s.rss[i])
				ws.cpu = append(ws.cpu, s.cpu[i])
			}
		}
		w.series[pid] = &ws
	}
	for i, t := range c.over.Time {
		if in(t) {
			w.over.Time = append(w.over.Time, t)
			w.over.Counters = append(w.over.Counters, c.over.Counters[i])
			w.over.Threads = append(w.over.Threads, c.over.Threads[i])
		}
	}
	for i, t := range c.powerTime {
		if in(t) {
			w.powerTime = append(w.powerTime, t)
			for name, v := range c.power {
				w.power[name] = append(w.power[name], v[i])
			}
		}
	}
	w.attach(p, t0)
	if keep {
		return
	}
	// The readings from end on are the next window's; a power reading at
	// end is kept too, as the next window counts from it.
	for pid, s := range c.series {
		i := sort.Search(len(s.time), func(i int) bool { return s.time[i] > end })
		if i == len(s.time) && !live[pid] {
			delete(c.series, pid)
			continue
		}
		s.time, s.rss, s.cpu = slices.Clone(s.time[i:]), slices.Clone(s.rss[i:]), slices.Clone(s.cpu[i:])
	}
	i := sort.Search(len(c.over.Time), func(i int) bool { return c.over.Time[i] > end })
	c.over.Time, c.over.Counters, c.over.Threads = slices.Clone(c.over.Time[i:]), slices.Clone(c.over.Counters[i:]), slices.Clone(c.over.Threads[i:])
	i = max(sort.Search(len(c.powerTime), func(i int) bool { return c.powerTime[i] > end })-1, 0)
	c.powerTime = slices.Clone(c.powerTime[i:])
	for name, v := range c.power {
		c.power[name] = slices.Clone(v[i:])
	}
}

// symbolizeNow is symbolize without first rereading the JIT dumps (the
// window's cut did, while the handler was held): the handler may be
// unwinding with them meanwhile.
func (r *libResolver) symbolizeNow(p *profile.Profile) (symbolize.Stats, error) {
	return r.symbolizeReading(p, false)
}

// nameCache keeps the names the windows of a recording resolved, by
// library and address, and the addresses that had none, so that a window
// opens (and indexes) only the binaries of addresses new to the
// recording: in a steady state, none. Names from JIT perf maps are not
// kept: a runtime may put other code at an address.
type nameCache struct {
	known profile.SymbolTable
}

// fill gives p the names known for its addresses; an address known to
// have none gets an empty entry, which symbolize takes as done.
func (nc *nameCache) fill(p *profile.Profile) {
	if p.Symbols == nil {
		p.Symbols = &profile.SymbolTable{}
	}
	symbolize.Lookups(p, func(k profile.LibKey, addr uint64, perfMap bool) {
		if ls := nc.known.Libs[k]; ls != nil && !perfMap {
			if f, ok := ls.Addresses[addr]; ok {
				p.Symbols.Add(k, addr, f)
			}
		}
	})
}

// learn keeps what p's symbolization found, and drops the empty entries
// of fill from p.
func (nc *nameCache) learn(p *profile.Profile) {
	symbolize.Lookups(p, func(k profile.LibKey, addr uint64, perfMap bool) {
		if perfMap {
			return
		}
		f := p.Symbols.Lookup(k, addr)
		if f == nil {
			f = []profile.SymbolFrame{}
		}
		nc.known.Add(k, addr, f)
	})
	for _, ls := range p.Symbols.Libs {
		for addr, f := range ls.Addresses {
			if len(f) == 0 {
				delete(ls.Addresses, addr)
			}
		}
	}
}

// hasThreads reports whether p has a thread: a profile without one is no
// profile to the front-end.
func hasThreads(p *profile.Profile) bool {
	for _, pr := range p.Processes {
		if len(pr.Threads) > 0 {
			return true
		}
	}
	return false
}

// Empty reports whether a window has no thread: nothing ran in it.
func (w Window) Empty() bool { return !hasThreads(w.Profile) }
