package suspend

// The Windows suspend backend's logic, over a small interface to the
// Win32 calls so that it runs (and is tested) on any OS: the live calls
// are in live_windows.go. Each tick it samples the threads that used CPU
// lately: it suspends them, reads their registers (GetThreadContext) and
// a copy of their stacks (ReadProcessMemory), resumes them, and unwinds
// the copies afterwards with the modules' .pdata. Between ticks it finds
// new threads (newThreads), and every so often it reconciles the
// process's thread list (Toolhelp), reporting new threads and the ones
// gone, and rereads the loader's module list. How often ticks come is
// pace.go's matter.

import (
	"bytes"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/gprof-dev/gprof/attach/internal/suspendwalk"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/unwind"
)

// winProcess is the Win32 interface of one target process.
type winProcess interface {
	// threads lists the IDs of the process's threads, in the order
	// Toolhelp gives them (creation order: the main thread first); an
	// error or no thread means the process is gone.
	threads() ([]uint32, error)
	// newThreads returns the IDs of the threads created since its
	// previous call (at the first, all of them), at a cost small enough
	// for every few ms: it finds new threads between two lists. A process
	// that cannot tell returns nil. It makes system calls only (it may
	// run while target threads are suspended, see captureBatch), and the
	// slice is good until the next call.
	newThreads() []uint32
	// exited reports whether the process has exited; cheap enough for
	// every tick.
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
	context() (event.Regs, uint64, error)
	// cpu returns the thread's user plus kernel time in ns, or
	// errThreadExited once it has exited.
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

// Windows updates a thread's CPU time at the clock tick (15.6 ms by
// default; under Wine it comes from /proc in 10 ms steps), far coarser
// than a sampling interval, so a running thread's time moves in steps,
// and reading it more often than a step is wasted: under Wine each read
// is a wineserver round trip.
const (
	// suspendActiveFor is how long a thread is still sampled after its
	// CPU time last moved: three clock ticks.
	suspendActiveFor = 50 * time.Millisecond
	// suspendTimesEvery is how often the CPU time of a thread sampled
	// lately is read; suspendIdleTimesEvery that of the others, to see
	// them start running again.
	suspendTimesEvery     = 10 * time.Millisecond
	suspendIdleTimesEvery = 50 * time.Millisecond
	// suspendProbeEvery is how often newThreads is asked for threads
	// created since: a thread's CPU time from its start counts, so until
	// it is found its samples are missing.
	suspendProbeEvery = 4 * time.Millisecond
	// suspendBatchBytes bounds the stack copies of one batch (see
	// captureBatch); a batch holds 4 to 16 threads.
	suspendBatchBytes = 4 << 20
	// A thread is through its start (see sampleAll) once a capture of it
	// took less than suspendSettle, or after suspendSettleTries.
	suspendSettle      = 5 * time.Millisecond
	suspendSettleTries = 5
)

type winThreadState struct {
	h       winThread
	id      uint32 // the Windows thread ID
	tid     int
	lastCPU int64  // CPU time (ns) at its last sample
	cpu     int64  // CPU time (ns) at its last read
	readAt  int64  // when cpu was read
	movedAt int64  // when its CPU time was last seen to move
	top     uint64 // stack base
	// lastPrint is the register fingerprint of its last sample.
	lastPrint uint64
	// added is the list sequence number when it was added; listed the
	// number of the last list that named it.
	added, listed uint64
	// exited says its CPU time read told it has exited; settled that it
	// is through its start (see sampleAll), after starts captures.
	exited, settled bool
	starts          int
}

// errThreadExited is what winThread.cpu returns for a thread that has
// exited: it is reported gone then, not at the next list.
var errThreadExited = errors.New("thread exited")

// suspendSampler samples the threads of one process.
type suspendSampler struct {
	proc      winProcess
	pid       int
	emit      func(event.Event)
	now       func() int64
	maxFrames int
	// loadModule reads a module's unwind tables (nil leaves its frames
	// to be unwound as leaves) and its identity for its Map event (nil
	// if unknown).
	loadModule func(path string) (*unwind.PEImage, *objfile.Identity)
	// fpOnly walks frame pointers instead of .pdata (arm64).
	fpOnly bool
	arch   suspendwalk.Arch

	threads map[uint32]*winThreadState
	// order holds the threads by tid (nil: to be sorted again).
	order []*winThreadState
	mods  []unwind.PEModule // sorted by Base
	// async, when set, receives modules read on other goroutines;
	// pending counts the reads under way.
	async   chan loadedModule
	pending int
	done    chan struct{} // closed by close
	modSeen map[uint64]bool
	started bool

	// asyncLists, when set, has the thread and module lists taken on
	// another goroutine (see tick); lists receives them, listing says
	// one is under way. listSeq numbers the lists.
	asyncLists bool
	lists      chan listResult
	listing    bool
	listSeq    uint64
	modsAt     int64 // when the last module list was asked for
	probedAt   int64

	// slots are the stack buffers of a batch, caps its captures, cands
	// the threads to sample at a tick, window the rest of its calls.
	slots  [][]byte
	caps   []capture
	cands  []*winThreadState
	window windowWork
	frames []uint64
	sample event.Sample
	// deferred holds the samples taken while module tables are being
	// read, with copies of their stacks, to be unwound once the tables
	// are in; deferredBytes is the size of those copies.
	deferred      []deferredSample
	deferredBytes int

	procName string
	argv     []string
	execd    bool
	// samples counts the samples taken, suspends the threads suspended,
	// sampledCPU the CPU time (ns) the samples stand for (their deltas);
	// failed the captures that failed (a suspend, or a context read),
	// unchanged those of threads that had not run since their last.
	samples, suspends int
	sampledCPU        int64
	failed, unchanged int
	// startWork is the time (ns) spent capturing threads not through
	// their start.
	startWork int64
	// listFailures counts thread lists that failed while the process
	// lived.
	listFailures int
	// modsStale says a stack ended at its first frame: its PC may be in
	// a module loaded since the last list.
	modsStale bool
}

func newSuspendSampler(p winProcess, pid, stackSize int, emit func(event.Event), now func() int64) *suspendSampler {
	s := &suspendSampler{
		proc: p, pid: pid, emit: emit, now: now, maxFrames: 1024,
		threads: map[uint32]*winThreadState{}, modSeen: map[uint64]bool{},
		arch: suspendwalk.AMD64, done: make(chan struct{}),
	}
	n := min(max(suspendBatchBytes/max(stackSize, 1), 4), 16)
	s.slots = make([][]byte, n)
	for i := range s.slots {
		s.slots[i] = make([]byte, stackSize)
	}
	s.caps = make([]capture, n)
	return s
}

// listResult is, with list, a thread list and, with slow, a module
// list, taken for list number seq.
type listResult struct {
	seq        uint64
	list, slow bool
	ids        []uint32
	err        error
	mods       []winModule
	modsErr    error
}

// deferredSample is a sample whose stack is yet to be unwound.
type deferredSample struct {
	time  int64
	tid   int
	delta int64
	regs  event.Regs
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
	s.order = nil
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

// sorted returns the threads by tid; the slice is kept until the
// threads change.
func (s *suspendSampler) sorted() []*winThreadState {
	if s.order == nil {
		s.order = suspendwalk.ByTid(s.threads, func(th *winThreadState) int { return th.tid })
	}
	return s.order
}

// loadedModule is a module's unwind tables and identity, read from its
// file.
type loadedModule struct {
	mod   winModule
	image *unwind.PEImage
	id    *objfile.Identity
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
	if mods, err := s.proc.modules(); err == nil {
		s.takeModules(mods)
	}
}

// takeModules takes up the modules of a list that are new.
func (s *suspendSampler) takeModules(mods []winModule) {
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
	m := &event.Map{Time: s.now(), Pid: s.pid, Start: l.mod.Base, End: l.mod.Base + l.mod.Size, Path: l.mod.Path}
	if l.id != nil {
		// A PE's relative addresses are RVAs: from where it loaded.
		m.Image, m.ImageBase = l.id, l.mod.Base
	}
	s.emit(m)
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
// list (a Toolhelp snapshot of every thread of the system: 6 to 12 ms
// under Wine, which keep wineserver from answering anyone else
// meanwhile); slow also rereads the module list, as does the first tick
// after a stack that found no module (see wantsModules). With
// asyncLists those lists are taken on another goroutine and reconciled
// at the first tick after they are in, so that no tick waits for them.
// Between lists, newThreads finds new threads, and a thread's CPU time
// read tells its exit. The first tick lists at once. It returns
// suspendwalk.ErrTaskGone when the process is gone.
func (s *suspendSampler) tick(list, slow bool) error {
	s.drainLoads()
	if !s.holding() {
		s.flush(false)
	}
	if s.proc.exited() {
		return suspendwalk.ErrTaskGone
	}
	slow = slow || s.wantsModules()
	switch {
	case !s.started:
		// The first list; nothing has run yet that could be sampled.
		return s.takeList(s.fetchList(s.startList(true), true, true))
	case s.asyncLists:
		if (list || slow) && !s.listing {
			s.listing = true
			seq := s.startList(slow)
			go func(done chan struct{}) {
				r := s.fetchList(seq, list, slow)
				select {
				case s.lists <- r:
				case <-done: // the sampler closed
				}
			}(s.done)
		}
		select {
		case r := <-s.lists:
			s.listing = false
			if err := s.takeList(r); err != nil {
				return err
			}
		default:
		}
	case list || slow:
		if err := s.takeList(s.fetchList(s.startList(slow), list, slow)); err != nil {
			return err
		}
	}
	s.sampleAll(s.now())
	return nil
}

// suspendStaleEvery is how soon a module list follows a stack that found
// no module (see wantsModules).
const suspendStaleEvery = 50 * time.Millisecond

// wantsModules says the module list should be reread sooner than its
// usual time: a stack found no module, which may have been loaded since
// the last list (and a command started suspended has no module list
// until its loader has run).
func (s *suspendSampler) wantsModules() bool {
	return s.modsStale && s.now()-s.modsAt >= int64(suspendStaleEvery)
}

// startList numbers a new list: threads added from now on are not
// dropped for missing from it. slow says it lists the modules.
func (s *suspendSampler) startList(slow bool) uint64 {
	s.listSeq++
	if slow {
		s.modsAt = s.now()
	}
	return s.listSeq - 1
}

// fetchList takes the lists; it touches nothing of the sampler's but
// proc, so it can run on another goroutine.
func (s *suspendSampler) fetchList(seq uint64, list, slow bool) listResult {
	r := listResult{seq: seq, list: list, slow: slow}
	if list {
		r.ids, r.err = s.proc.threads()
	}
	if slow {
		r.mods, r.modsErr = s.proc.modules()
	}
	return r
}

// takeList reconciles a list: threads new to it are reported, threads
// missing from it that were known when it was taken are gone.
func (s *suspendSampler) takeList(r listResult) error {
	if r.slow {
		// A command started suspended has no module list until its
		// loader has run: Toolhelp fails, and a list soon after tries
		// again.
		s.modsStale = r.modsErr != nil || len(r.mods) == 0
		s.takeModules(r.mods)
	}
	if !r.list {
		return nil
	}
	if r.err != nil || len(r.ids) == 0 {
		// A snapshot can fail while the process lives (under Wine it
		// sometimes does): only the process's exit ends its sampling.
		if s.proc.exited() || !s.started {
			return suspendwalk.ErrTaskGone
		}
		s.listFailures++
		return nil
	}
	first := !s.started
	s.started = true
	now := s.now()
	for _, id := range r.ids {
		if th := s.threads[id]; th != nil {
			th.listed = r.seq
		}
	}
	for _, th := range s.sorted() {
		if th.listed != r.seq && th.added <= r.seq {
			s.dropThread(th, now)
		}
	}
	if first {
		// The main thread takes the pid as its tid, as on Linux, which
		// is how the rest of gprof tells the main thread and the
		// process's exit. Threads there when sampling starts count their
		// CPU time from then and are sampled once it moves; a launched
		// command's main thread is about to run.
		s.addThreads(r.ids, now, true)
	} else {
		s.addThreads(r.ids, now, false)
	}
	for _, id := range r.ids {
		if th := s.threads[id]; th != nil {
			th.listed = r.seq
		}
	}
	return nil
}

// addThreads opens and reports the threads of ids not known yet. With
// first, they are the ones there when sampling starts (ids[0] the main
// thread). Threads created later count their CPU time from their start
// and are sampled from the first tick.
func (s *suspendSampler) addThreads(ids []uint32, now int64, first bool) {
	var fresh []*winThreadState
	for i, id := range ids {
		if s.threads[id] != nil {
			continue
		}
		h, err := s.proc.open(id)
		if err != nil {
			continue // exiting, or not ours to open
		}
		th := &winThreadState{h: h, id: id, tid: int(id), top: h.stackTop(), added: s.listSeq, movedAt: now}
		if first && i == 0 {
			th.tid = s.pid
		}
		c, err := h.cpu()
		if errors.Is(err, errThreadExited) {
			h.close() // gone already (Wine lists exited threads still referenced)
			continue
		}
		if err == nil {
			th.cpu, th.readAt = c, now
			if first {
				th.lastCPU = c
			}
		}
		if first && !(s.execd && i == 0) {
			th.movedAt = now - int64(suspendActiveFor) - 1
		}
		s.threads[id] = th
		s.order = nil
		fresh = append(fresh, th)
	}
	slices.SortFunc(fresh, func(a, b *winThreadState) int { return a.tid - b.tid })
	for _, th := range fresh {
		suspendwalk.EmitNewThread(s.emit, now, s.pid, th.tid, s.procName, first, s.argv, s.execd)
	}
}

// dropThread reports th's exit and forgets it.
func (s *suspendSampler) dropThread(th *winThreadState, now int64) {
	s.flush(false)       // its samples come before its exit
	if th.tid != s.pid { // the main thread's exit is the process's
		s.emit(&event.Exit{Time: now, Pid: s.pid, Tid: th.tid})
	}
	th.h.close()
	delete(s.threads, th.id)
	s.order = nil
}

// sampleAll samples the threads whose CPU time moved in the last
// suspendActiveFor and, when it did not move since their last sample,
// whose registers did. They are captured in batches (see captureBatch),
// which read their CPU time every suspendTimesEvery. The other threads'
// CPU time is read every suspendIdleTimesEvery, to see them run again,
// and newThreads asked every suspendProbeEvery: while the first batch
// holds its threads, when there is one (see windowWork). Threads seen to
// have exited are reported gone.
func (s *suspendSampler) sampleAll(now int64) {
	w := &s.window
	w.probe = now-s.probedAt >= int64(suspendProbeEvery)
	if w.probe {
		s.probedAt = now
	}
	w.idle = w.idle[:0]
	cands := s.cands[:0]
	for _, th := range s.sorted() {
		switch {
		case th.exited:
		case now-th.movedAt <= int64(suspendActiveFor):
			cands = append(cands, th)
		case now-th.readAt >= int64(suspendIdleTimesEvery):
			w.idle = append(w.idle, idleRead{th: th})
		}
	}
	if len(cands) == 0 {
		// No batch: the reads now, and the threads that ran are sampled
		// at once. (With a batch, they are sampled from the next tick.)
		w.do(s.proc)
		w = nil
		for i := range s.window.idle {
			r := &s.window.idle[i]
			s.readCPU(r.th, r.cpu, r.err, now)
			if !r.th.exited && r.th.movedAt == now {
				cands = append(cands, r.th)
			}
			r.th = nil
		}
		s.window.idle = s.window.idle[:0]
	}
	// Threads not through their start come last, in batches of their
	// own: under Wine a thread that has just started (or a process whose
	// loader still runs) stops only once it is through its start, tens
	// of ms on a busy machine, and would hold the others of its batch
	// suspended meanwhile. That wait is not what sampling costs: it is
	// counted apart (startWork), and a thread is through its start when
	// a capture of it took less than suspendSettle, or after
	// suspendSettleTries.
	slices.SortStableFunc(cands, func(a, b *winThreadState) int {
		switch {
		case a.settled == b.settled:
			return 0
		case a.settled:
			return -1
		}
		return 1
	})
	s.cands = cands
	for len(cands) > 0 {
		n := min(len(cands), len(s.caps))
		settled := cands[0].settled
		if i := slices.IndexFunc(cands[:n], func(th *winThreadState) bool { return th.settled != settled }); i > 0 {
			n = i
		}
		t0 := s.now()
		caps := s.captureBatch(cands[:n], now, w)
		if !settled {
			took := s.now() - t0
			s.startWork += took
			for _, th := range cands[:n] {
				th.starts++
				th.settled = took < int64(suspendSettle) || th.starts >= suspendSettleTries
			}
		}
		s.take(caps, now)
		cands = cands[n:]
		w = nil
	}
	clear(s.cands)
	w = &s.window
	for i := range w.idle {
		r := &w.idle[i]
		s.readCPU(r.th, r.cpu, r.err, now)
		r.th = nil
	}
	if w.probe {
		s.addThreads(w.ids, now, false)
	}
	for _, th := range s.sorted() {
		if th.exited {
			s.dropThread(th, now)
		}
	}
}

// windowWork is what a tick asks of wineserver besides its samples: it
// is done while the first batch of the tick holds its threads, when
// there is one. Under Wine every call is a round trip to wineserver,
// which while the targets run waits for a CPU (a ms and more with the
// CPUs busy); while they are suspended it gets one at once. The calls
// are system calls only: newThreads fills a buffer it keeps.
type windowWork struct {
	probe bool     // ask newThreads
	ids   []uint32 // what it answered
	idle  []idleRead
}

// idleRead is a read of the CPU time of a thread that did not run lately.
type idleRead struct {
	th  *winThreadState
	cpu int64
	err error
}

func (w *windowWork) do(p winProcess) {
	for i := range w.idle {
		r := &w.idle[i]
		r.cpu, r.err = r.th.h.cpu()
	}
	w.ids = nil
	if w.probe {
		w.ids = p.newThreads()
	}
}

// readCPU takes a read of th's CPU time.
func (s *suspendSampler) readCPU(th *winThreadState, c int64, err error, now int64) {
	switch {
	case errors.Is(err, errThreadExited):
		th.exited = true
	case err == nil:
		if c != th.cpu {
			th.movedAt = now
		}
		th.cpu, th.readAt = c, now
	}
}

// take makes samples of a batch's captures.
func (s *suspendSampler) take(caps []capture, now int64) {
	for i := range caps {
		c := &caps[i]
		th := c.th
		c.th = nil
		if c.readCPU {
			s.readCPU(th, c.cpu, c.cpuErr, now)
		}
		if th.exited {
			continue
		}
		if !c.ok {
			s.failed++
			continue // keeps the CPU time for the next sample
		}
		delta := max(th.cpu-th.lastCPU, 0)
		// Between two steps of its CPU time, a thread whose registers
		// have not changed since its last sample is blocked, not
		// running: it was sampled there already.
		if delta == 0 && c.print == th.lastPrint {
			s.unchanged++
			continue
		}
		th.lastPrint = c.print
		th.lastCPU = th.cpu
		s.samples++
		s.sampledCPU += delta
		now := s.now()
		if s.holding() {
			// Until a module's tables are in, its frames unwind as
			// leaves, which cuts the stack short at the first of them: on
			// a loaded machine reading the modules takes up to a second,
			// the first second of a recording; and a command started
			// suspended has no module list until a list after its loader
			// ran. Keep a copy of the stack instead, and unwind it once
			// the tables are in.
			if len(s.deferred) >= suspendDeferMax || s.deferredBytes+len(c.stack) > suspendDeferMaxBytes {
				s.flush(false)
			}
			s.deferred = append(s.deferred, deferredSample{time: now, tid: th.tid, delta: delta, regs: c.regs, stack: bytes.Clone(c.stack)})
			s.deferredBytes += len(c.stack)
			continue
		}
		s.emitSample(now, th.tid, delta, c.regs, c.stack)
	}
}

// holding says samples are to be held until module tables are in:
// module files are being read, or no module is known yet.
func (s *suspendSampler) holding() bool {
	return !s.fpOnly && (s.pending > 0 || len(s.mods) == 0)
}

// emitSample unwinds a sample's stack and emits it.
func (s *suspendSampler) emitSample(at int64, tid int, delta int64, regs event.Regs, stack []byte) {
	if s.fpOnly {
		s.frames = suspendwalk.WalkFP(s.arch, regs, stack, regs.SP, s.frames[:0], s.maxFrames)
	} else {
		s.frames = unwind.UnwindPE(s.mods, unwind.Regs(regs), stack, s.maxFrames, s.frames[:0])
	}
	if len(s.frames) < 2 {
		s.modsStale = true
	}
	s.sample = event.Sample{Time: at, Pid: s.pid, Tid: tid, CPU: -1, CPUDelta: delta, Stack: s.frames}
	s.emit(&s.sample)
}

// capture is one thread of a batch: whether it was suspended, and if ok
// its registers and stack copy (in a slot of the batch's buffers).
type capture struct {
	th        *winThreadState
	suspended bool
	ok        bool
	regs      event.Regs
	print     uint64
	stack     []byte
	// readCPU says its CPU time is due to be read; cpu and cpuErr are
	// what the read gave.
	readCPU bool
	cpu     int64
	cpuErr  error
}

// captureBatch suspends each thread of ths, then reads the CPU time of
// those due for a read at now, then each one's registers and a copy of
// its stack, then resumes them all: on every path out, a panic included.
// Suspending them all first leaves the threads' CPUs free while the
// reads are made (under Wine each call is a round trip to wineserver,
// which otherwise waits for a CPU the targets hold) and gives each
// thread time to stop (under Wine a thread stops in a signal handler
// that reports its registers, which GetThreadContext otherwise waits
// for; the CPU times are read meanwhile). Between the first SuspendThread and the last
// ResumeThread there are system calls and nothing else (no allocation,
// no handler call, no lock but suspendwalk.Mu), so a gprof killed
// outright (TerminateProcess, which runs no deferred code) has the
// smallest window to leave a thread suspended; Settle closes it for
// gprof's own exits.
func (s *suspendSampler) captureBatch(ths []*winThreadState, now int64, w *windowWork) []capture {
	caps := s.caps[:len(ths)]
	for i, th := range ths {
		caps[i] = capture{th: th, readCPU: now-th.readAt >= int64(suspendTimesEvery)}
	}
	suspendwalk.Mu.Lock()
	defer suspendwalk.Mu.Unlock()
	defer resumeAll(caps)
	for i := range caps {
		if caps[i].th.h.suspend() == nil {
			caps[i].suspended = true
			s.suspends++
		}
	}
	for i := range caps {
		if c := &caps[i]; c.readCPU {
			c.cpu, c.cpuErr = c.th.h.cpu()
		}
	}
	if w != nil {
		w.do(s.proc)
	}
	for i := range caps {
		c := &caps[i]
		if !c.suspended {
			continue
		}
		regs, print, err := c.th.h.context()
		if err != nil {
			continue
		}
		c.regs, c.print = regs, print
		c.stack = s.readStack(regs.SP, c.th.top, s.slots[i])
		c.ok = true
	}
	return caps
}

// resumeAll resumes every suspended thread of caps, going on past a
// resume that panics, and then panics with the first panic. A thread
// whose resume failed gives no sample.
func resumeAll(caps []capture) {
	var first any
	for i := range caps {
		c := &caps[i]
		if !c.suspended {
			continue
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					c.ok = false
					if first == nil {
						first = r
					}
				}
			}()
			if c.th.h.resume() != nil {
				c.ok = false
			}
		}()
		c.suspended = false
	}
	if first != nil {
		panic(first)
	}
}

// readStack copies the stack from sp up to top (the thread's stack base,
// 0 if unknown) into buf, at most len(buf) bytes. If that read fails, the
// longest readable copy ending at a page boundary is found by binary
// search.
func (s *suspendSampler) readStack(sp, top uint64, buf []byte) []byte {
	n := uint64(len(buf))
	if top > sp && top-sp < n {
		n = top - sp
	}
	if n == 0 {
		return nil
	}
	if s.proc.read(sp, buf[:n]) == nil {
		return buf[:n]
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
		if s.proc.read(sp, buf[:end-sp]) == nil {
			best, lo = end-sp, k+1
		} else {
			hi = k
		}
	}
	return buf[:best]
}
