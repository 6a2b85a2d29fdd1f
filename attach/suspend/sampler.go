package suspend

// The Windows suspend backend's logic, over a small interface to the
// Win32 calls so that it runs (and is tested) on any OS: the live calls
// are in live_windows.go. Each tick it lists the process's threads
// (Toolhelp), opens new ones and reports them, reports the ones gone, and
// for each thread that used CPU lately suspends it just long enough to
// read its registers (GetThreadContext) and a copy of its stack
// (ReadProcessMemory), resumes it, and unwinds the copy afterwards with
// the modules' .pdata. The loader's module list is reread every slow tick.

import (
	"bytes"
	"slices"
	"sort"
	"time"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/suspendwalk"
	"github.com/gprof-dev/gprof/unwind"
)

// winProcess is the Win32 interface of one target process.
type winProcess interface {
	// threads lists the IDs of the process's threads, in the order
	// Toolhelp gives them (creation order: the main thread first); an
	// error or no thread means the process is gone.
	threads() ([]uint32, error)
	// exited reports whether the process has exited.
	exited() bool
	open(tid uint32) (winThread, error)
	// modules lists the loaded modules (the executable first).
	modules() ([]winModule, error)
	// read copies target memory at addr into buf; it fails unless all of
	// it was readable.
	read(addr uint64, buf []byte) error
}

// winThread is an open thread handle.
type winThread interface {
	suspend() error
	resume() error
	// context returns the registers and a fingerprint of every integer
	// register, which tells a thread that ran from one that did not.
	context() (attach.Regs, uint64, error)
	// cpu returns the thread's user plus kernel time in ns.
	cpu() (int64, error)
	// stackTop returns the thread's stack base (the TEB's StackBase), the
	// end of its stack; 0 if unknown.
	stackTop() uint64
	close()
}

// winModule is one module from the loader's list.
type winModule struct {
	Base, Size uint64
	Path       string
}

// suspendActiveTicks is how many ticks a thread is still sampled after its
// CPU time last moved: Windows updates thread times at the clock tick
// (15.6 ms by default, 10 ms under Wine), far coarser than a sampling
// interval, so a running thread's time moves in steps.
const suspendActiveTicks = 20

type winThreadState struct {
	h       winThread
	id      uint32 // the Windows thread ID
	tid     int
	lastCPU int64
	top     uint64 // stack base
	// lastPrint is the register fingerprint of its last sample.
	lastPrint uint64
	idle      int // ticks since its CPU time last moved
	gen       uint64
}

// suspendSampler samples the threads of one process.
type suspendSampler struct {
	proc      winProcess
	pid       int
	emit      func(attach.Event)
	now       func() int64
	maxFrames int
	// loadModule reads a module's unwind tables (nil leaves its frames
	// to be unwound as leaves) and its identity for its Map event (nil
	// if unknown).
	loadModule func(path string) (*unwind.PEImage, *attach.Image)
	// fpOnly walks frame pointers instead of .pdata (arm64).
	fpOnly bool
	arch   suspendwalk.Arch

	threads map[uint32]*winThreadState
	mods    []unwind.PEModule // sorted by Base
	// async, when set, receives modules read on other goroutines;
	// pending counts the reads under way.
	async   chan loadedModule
	pending int
	done    chan struct{} // closed by close
	modSeen map[uint64]bool
	gen     uint64
	started bool

	stack  []byte
	frames []uint64
	sample attach.Sample
	// deferred holds the samples taken while module tables are being
	// read, with copies of their stacks, to be unwound once the tables
	// are in; deferredBytes is the size of those copies.
	deferred      []deferredSample
	deferredBytes int

	procName string
	argv     []string
	execd    bool
	samples  int
	// listFailures counts thread lists that failed while the process
	// lived.
	listFailures int
	// modsStale says a stack ended at its first frame: its PC may be in
	// a module loaded since the last list.
	modsStale bool
	// suspended is the thread suspended right now, 0 if none (tests).
	suspended uint32
}

func newSuspendSampler(p winProcess, pid, stackSize int, emit func(attach.Event), now func() int64) *suspendSampler {
	return &suspendSampler{
		proc: p, pid: pid, emit: emit, now: now, maxFrames: 1024,
		threads: map[uint32]*winThreadState{}, modSeen: map[uint64]bool{},
		stack: make([]byte, stackSize), arch: suspendwalk.AMD64, done: make(chan struct{}),
	}
}

// deferredSample is a sample whose stack is yet to be unwound.
type deferredSample struct {
	time  int64
	tid   int
	delta int64
	regs  attach.Regs
	stack []byte
}

// Bounds on the samples held for tables still being read: past either,
// they are unwound with the tables that are in.
const (
	suspendDeferMax      = 2000
	suspendDeferMaxBytes = 64 << 20
	// suspendLoadWait bounds the wait, when sampling ends, for module
	// tables still being read.
	suspendLoadWait = 3 * time.Second
)

// close unwinds the samples still held (waiting a little for the tables
// they need), closes the thread handles and lets module reads under way
// end.
func (s *suspendSampler) close() {
	s.flush(true)
	if s.done != nil {
		close(s.done)
		s.done = nil
	}
	for id, th := range s.threads {
		th.h.close()
		delete(s.threads, id)
	}
}

// gone reports the exit of every known thread and of the process.
func (s *suspendSampler) gone() {
	s.flush(true) // the samples held come before the exits
	var tids []int
	for _, th := range s.sorted() {
		tids = append(tids, th.tid)
	}
	suspendwalk.EmitGone(s.emit, s.now(), s.pid, tids)
	s.close()
}

func (s *suspendSampler) sorted() []*winThreadState {
	return suspendwalk.ByTid(s.threads, func(th *winThreadState) int { return th.tid })
}

// loadedModule is a module's unwind tables and identity, read from its
// file.
type loadedModule struct {
	mod   winModule
	image *unwind.PEImage
	id    *attach.Image
}

// load reads m's tables and identity.
func (s *suspendSampler) load(m winModule) loadedModule {
	l := loadedModule{mod: m}
	if s.loadModule != nil {
		l.image, l.id = s.loadModule(m.Path)
	}
	return l
}

// syncModules takes up the modules loaded since the last call. With
// async set their files are read on other goroutines, not in the tick
// (on a loaded machine reading a DLL takes a good part of a second, and
// no thread would be sampled meanwhile); a module's frames unwind as
// leaves until its tables are in, and its Map is sent then.
func (s *suspendSampler) syncModules() {
	mods, err := s.proc.modules()
	if err != nil {
		return
	}
	for i, m := range mods {
		if i == 0 && s.procName == "" {
			s.procName = baseName(m.Path)
		}
		if s.modSeen[m.Base] {
			continue
		}
		s.modSeen[m.Base] = true
		s.addModule(loadedModule{mod: m})
		if s.async == nil {
			s.loaded(s.load(m))
			continue
		}
		s.pending++
		go func(done chan struct{}) {
			l := s.load(m)
			select {
			case s.async <- l:
			case <-done: // the sampler closed
			}
		}(s.done)
	}
}

// flush unwinds and emits the held samples, in the order taken. With wait
// it first waits, up to suspendLoadWait, for the module reads under way.
func (s *suspendSampler) flush(wait bool) {
	if len(s.deferred) == 0 {
		return
	}
	if wait && s.done != nil {
		deadline := time.After(suspendLoadWait)
	loads:
		for s.pending > 0 {
			select {
			case l := <-s.async:
				s.pending--
				s.loaded(l)
			case <-deadline:
				break loads
			}
		}
	}
	for i := range s.deferred {
		d := &s.deferred[i]
		s.emitSample(d.time, d.tid, d.delta, d.regs, d.stack)
		s.deferred[i] = deferredSample{}
	}
	s.deferred = s.deferred[:0]
	s.deferredBytes = 0
}

// drainLoads takes the modules whose files have been read.
func (s *suspendSampler) drainLoads() {
	for s.pending > 0 {
		select {
		case l := <-s.async:
			s.pending--
			s.loaded(l)
		default:
			return
		}
	}
}

// addModule puts l's module in the unwinder's list, in address order.
func (s *suspendSampler) addModule(l loadedModule) {
	pm := unwind.PEModule{Base: l.mod.Base, End: l.mod.Base + l.mod.Size, Image: l.image}
	i := sort.Search(len(s.mods), func(i int) bool { return s.mods[i].Base >= pm.Base })
	if i < len(s.mods) && s.mods[i].Base == pm.Base {
		s.mods[i] = pm
		return
	}
	s.mods = slices.Insert(s.mods, i, pm)
}

// loaded sets a read module's tables and sends its Map.
func (s *suspendSampler) loaded(l loadedModule) {
	s.addModule(l)
	var img *attach.Image
	if l.id != nil {
		// A PE's relative addresses are RVAs: from where it loaded.
		c := *l.id
		c.Base = l.mod.Base
		img = &c
	}
	s.emit(&attach.Map{Time: s.now(), Pid: s.pid, Start: l.mod.Base, End: l.mod.Base + l.mod.Size, Path: l.mod.Path, Image: img})
}

// baseName is filepath.Base for both Windows and slash paths.
func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '\\' || p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// tick samples the threads that ran. list also reconciles the thread
// list and checks that the process lives (a Toolhelp snapshot of every
// thread of the system, and a wait on the process, too costly for every
// tick: between lists, a thread that exited fails to suspend or shows no
// CPU time, and is reported at the next list, as new threads are); slow
// also rereads the module list. It returns suspendwalk.ErrTaskGone when the process
// is gone.
func (s *suspendSampler) tick(list, slow bool) error {
	s.drainLoads()
	if s.pending == 0 {
		s.flush(false)
	}
	if !s.started {
		list, slow = true, true
	}
	if !list {
		for _, th := range s.sorted() {
			s.sampleThread(th)
		}
		return nil
	}
	if s.proc.exited() {
		return suspendwalk.ErrTaskGone
	}
	ids, err := s.proc.threads()
	if err != nil || len(ids) == 0 {
		// A snapshot can fail while the process lives (under Wine it
		// sometimes does): only the process's exit ends its sampling.
		if s.proc.exited() || !s.started {
			return suspendwalk.ErrTaskGone
		}
		s.listFailures++
		return nil
	}
	first := !s.started
	// The loader's list is reread every slow tick, and at the next list
	// after a stack that found no module (a command started suspended
	// has no list yet: Toolhelp fails until its loader has run).
	if first || slow || s.modsStale {
		s.modsStale = false
		s.syncModules()
	}
	s.started = true
	s.gen++
	now := s.now()
	var fresh []*winThreadState
	for i, id := range ids {
		if th := s.threads[id]; th != nil {
			th.gen = s.gen
			continue
		}
		h, err := s.proc.open(id)
		if err != nil {
			continue // exiting, or not ours to open
		}
		th := &winThreadState{h: h, id: id, tid: int(id), gen: s.gen, idle: suspendActiveTicks, top: h.stackTop()}
		// The main thread takes the pid as its tid, as on Linux, which is
		// how the rest of gprof tells the main thread and the process's
		// exit.
		if first && i == 0 {
			th.tid = s.pid
		}
		if c, err := h.cpu(); err == nil && first {
			// Threads there when sampling starts count their CPU time
			// from then; threads created later from their start.
			th.lastCPU = c
		}
		s.threads[id] = th
		fresh = append(fresh, th)
	}
	for _, th := range s.sorted() {
		if th.gen != s.gen {
			s.dropThread(th, now)
		}
	}
	slices.SortFunc(fresh, func(a, b *winThreadState) int { return a.tid - b.tid })
	for _, th := range fresh {
		if !first {
			s.emit(&attach.Fork{Time: now, Pid: s.pid, Tid: th.tid, Ppid: s.pid, Ptid: s.pid})
		}
		c := &attach.Comm{Time: now, Pid: s.pid, Tid: th.tid, Name: s.procName}
		if th.tid == s.pid {
			c.Argv, c.Exec = s.argv, s.execd
		}
		s.emit(c)
	}
	for _, th := range s.sorted() {
		s.sampleThread(th)
	}
	return nil
}

// dropThread reports th's exit and forgets it.
func (s *suspendSampler) dropThread(th *winThreadState, now int64) {
	s.flush(false)       // its samples come before its exit
	if th.tid != s.pid { // the main thread's exit is the process's
		s.emit(&attach.Exit{Time: now, Pid: s.pid, Tid: th.tid})
	}
	th.h.close()
	delete(s.threads, th.id)
}

// sampleThread samples th if its CPU time moved in the last
// suspendActiveTicks ticks and, when it did not move since the last
// sample, its registers did.
func (s *suspendSampler) sampleThread(th *winThreadState) {
	c, err := th.h.cpu()
	if err != nil {
		return
	}
	delta := max(c-th.lastCPU, 0)
	if delta > 0 {
		th.idle = 0
	} else {
		th.idle++
	}
	if th.idle >= suspendActiveTicks {
		return
	}
	regs, print, stack, err := s.capture(th)
	if err != nil {
		return // keeps the CPU time for the next sample
	}
	// Between two steps of its CPU time, a thread whose registers have
	// not changed since its last sample is blocked, not running: it was
	// sampled there already.
	if delta == 0 && print == th.lastPrint {
		return
	}
	th.lastPrint = print
	th.lastCPU = c
	s.samples++
	now := s.now()
	if s.pending > 0 && !s.fpOnly {
		// Until a module's tables are in, its frames unwind as leaves,
		// which cuts the stack short at the first of them: on a loaded
		// machine reading the modules takes up to a second, the first
		// second of a recording. Keep a copy of the stack instead, and
		// unwind it once the tables are in.
		if len(s.deferred) >= suspendDeferMax || s.deferredBytes+len(stack) > suspendDeferMaxBytes {
			s.flush(false)
		}
		s.deferred = append(s.deferred, deferredSample{time: now, tid: th.tid, delta: delta, regs: regs, stack: bytes.Clone(stack)})
		s.deferredBytes += len(stack)
		return
	}
	s.emitSample(now, th.tid, delta, regs, stack)
}

// emitSample unwinds a sample's stack and emits it.
func (s *suspendSampler) emitSample(at int64, tid int, delta int64, regs attach.Regs, stack []byte) {
	if s.fpOnly {
		s.frames = suspendwalk.WalkFP(s.arch, regs, stack, regs.SP, s.frames[:0], s.maxFrames)
	} else {
		s.frames = unwind.UnwindPE(s.mods, unwind.Regs(regs), stack, s.maxFrames, s.frames[:0])
	}
	if len(s.frames) < 2 {
		s.modsStale = true
	}
	s.sample = attach.Sample{Time: at, Pid: s.pid, Tid: tid, CPU: -1, CPUDelta: delta, Stack: s.frames}
	s.emit(&s.sample)
}

// capture suspends the thread, reads its registers and a copy of its
// stack, and resumes it: on every path out, a panic included. Between
// SuspendThread and ResumeThread there are two system calls and nothing
// else (no allocation, no handler call, no lock but suspendwalk.Mu), so a
// gprof killed outright (TerminateProcess, which runs no deferred code)
// has the smallest window to leave a thread suspended; Settle closes it
// for gprof's own exits.
func (s *suspendSampler) capture(th *winThreadState) (regs attach.Regs, print uint64, stack []byte, err error) {
	suspendwalk.Mu.Lock()
	defer suspendwalk.Mu.Unlock()
	if err := th.h.suspend(); err != nil {
		return attach.Regs{}, 0, nil, err
	}
	s.suspended = uint32(th.tid)
	defer func() {
		rerr := th.h.resume()
		s.suspended = 0
		if rerr != nil && err == nil {
			err = rerr
		}
	}()
	regs, print, err = th.h.context()
	if err != nil {
		return attach.Regs{}, 0, nil, err
	}
	return regs, print, s.readStack(regs.SP, th.top), nil
}

// readStack copies the stack from sp up to top (the thread's stack base,
// 0 if unknown), at most len(s.stack) bytes. If that read fails, the
// longest readable copy ending at a page boundary is found by binary
// search.
func (s *suspendSampler) readStack(sp, top uint64) []byte {
	n := uint64(len(s.stack))
	if top > sp && top-sp < n {
		n = top - sp
	}
	if n == 0 {
		return nil
	}
	if s.proc.read(sp, s.stack[:n]) == nil {
		return s.stack[:n]
	}
	// Candidate ends: the page boundaries above sp, below sp+n.
	first := (sp + suspendwalk.StackPage) &^ (suspendwalk.StackPage - 1)
	lo, hi := 0, 0 // pages k in [lo, hi): end = first + k*suspendwalk.StackPage
	for first+uint64(hi)*suspendwalk.StackPage < sp+n {
		hi++
	}
	best := uint64(0)
	for lo < hi {
		k := (lo + hi) / 2
		end := first + uint64(k)*suspendwalk.StackPage
		if s.proc.read(sp, s.stack[:end-sp]) == nil {
			best, lo = end-sp, k+1
		} else {
			hi = k
		}
	}
	return s.stack[:best]
}
