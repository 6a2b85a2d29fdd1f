package suspend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/attach/internal/suspendwalk"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/event/eventtest"
	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/unwind"
)

type fakeWinThread struct {
	p         *fakeWinProc
	id        uint32
	cpuNS     int64
	regs      event.Regs
	rax       uint64 // stands for the registers only the fingerprint sees
	ctxErr    error
	suspErr   error
	suspended int
	closed    bool
	cpuReads  int
	// slowStops is how many more context reads take 20 ms (on p.clock).
	slowStops int
}

func (t *fakeWinThread) suspend() error {
	t.p.log("suspend", t.id)
	if t.suspErr != nil {
		return t.suspErr
	}
	t.suspended++
	t.p.held++
	t.p.maxHeld = max(t.p.maxHeld, t.p.held)
	return nil
}
func (t *fakeWinThread) resume() error {
	t.p.log("resume", t.id)
	if t.suspended == 0 {
		return errors.New("not suspended")
	}
	t.suspended--
	t.p.held--
	if t.p.panicResumeOn == t.id {
		panic("after resume")
	}
	return nil
}
func (t *fakeWinThread) context() (event.Regs, uint64, error) {
	t.p.log("context", t.id)
	if t.slowStops > 0 && t.p.clock != nil {
		// A thread in its start stops late.
		t.slowStops--
		t.p.clock.add(20 * time.Millisecond)
	}
	if t.p.panicOn == t.id {
		panic("context")
	}
	return t.regs, t.regs.IP ^ t.rax, t.ctxErr
}
func (t *fakeWinThread) cpu() (int64, error) {
	if t.p.logReads {
		t.p.log("cpu", t.id)
	}
	t.cpuReads++
	return t.cpuNS, nil
}
func (t *fakeWinThread) stackTop() uint64 { return t.p.stackBase + uint64(len(t.p.mem)) }
func (t *fakeWinThread) close()           { t.closed = true }

type fakeWinProc struct {
	ids       []uint32
	ths       map[uint32]*fakeWinThread
	mods      []winModule
	stackBase uint64
	mem       []byte
	panicOn   uint32
	// panicResumeOn panics in that thread's resume, once it resumed.
	panicResumeOn uint32
	reads         int
	dead          bool
	listErr       error
	// noProbe makes newThreads find nothing; probed holds what it
	// returned.
	noProbe bool
	probed  map[uint32]bool
	// ops logs the thread calls when set; held counts the threads
	// suspended now, maxHeld the most at once.
	ops           *[]string
	held, maxHeld int
	// logReads logs CPU time reads and newThreads calls too.
	logReads bool
	clock    *fakeClock
}

func (p *fakeWinProc) log(op string, id uint32) {
	if p.ops != nil {
		*p.ops = append(*p.ops, fmt.Sprintf("%s %d", op, id))
	}
}

func (p *fakeWinProc) threads() ([]uint32, error) {
	if p.listErr != nil {
		return nil, p.listErr
	}
	return slices.Clone(p.ids), nil
}
func (p *fakeWinProc) newThreads() []uint32 {
	if p.logReads {
		p.log("probe", 0)
	}
	if p.noProbe {
		return nil
	}
	if p.probed == nil {
		p.probed = map[uint32]bool{}
	}
	var ids []uint32
	for _, id := range p.ids {
		if !p.probed[id] {
			p.probed[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}
func (p *fakeWinProc) exited() bool { return p.dead }
func (p *fakeWinProc) open(id uint32) (winThread, error) {
	t := p.ths[id]
	if t == nil {
		return nil, errors.New("gone")
	}
	return t, nil
}
func (p *fakeWinProc) modules() ([]winModule, error) { return p.mods, nil }
func (p *fakeWinProc) read(addr uint64, buf []byte) error {
	p.reads++
	if addr < p.stackBase || addr-p.stackBase+uint64(len(buf)) > uint64(len(p.mem)) {
		return errors.New("unreadable")
	}
	copy(buf, p.mem[addr-p.stackBase:])
	return nil
}

// newFakeWinProc has a main thread 100 and a thread 101 in a module at
// 0x140000000 with no unwind tables (so frames unwind as leaves: the
// return address is at RSP), and a stack with two return addresses.
func newFakeWinProc() *fakeWinProc {
	p := &fakeWinProc{ths: map[uint32]*fakeWinThread{}, stackBase: 0x10000, mem: make([]byte, 64)}
	binary.LittleEndian.PutUint64(p.mem[0:], 0x140001100)
	binary.LittleEndian.PutUint64(p.mem[8:], 0x140001200)
	p.mods = []winModule{{Base: 0x140000000, Size: 0x10000, Path: `C:\t\split.exe`}}
	for _, id := range []uint32{100, 101} {
		p.ids = append(p.ids, id)
		p.ths[id] = &fakeWinThread{p: p, id: id, regs: event.Regs{IP: 0x140001000, SP: 0x10000}}
	}
	return p
}

// fakeClock is a sampler's clock that the test moves.
type fakeClock struct{ ns int64 }

func (c *fakeClock) now() int64          { return c.ns }
func (c *fakeClock) add(d time.Duration) { c.ns += int64(d) }
func (c *fakeClock) tick(s *suspendSampler, list, slow bool, d time.Duration) error {
	c.add(d)
	return s.tick(list, slow)
}

func TestSuspendSamplerTicks(t *testing.T) {
	p := newFakeWinProc()
	var evs eventtest.Collector
	clock := &fakeClock{ns: 1e9}
	s := newSuspendSampler(p, 7, 4096, evs.Handle, clock.now)
	if err := s.tick(true, false); err != nil {
		t.Fatal(err)
	}
	// First tick: the module, the two threads (main as the pid), no
	// sample (nothing ran yet).
	for _, m := range evs.Maps {
		if m.Start != 0x140000000 || m.End != 0x140010000 {
			t.Errorf("map %#x-%#x", m.Start, m.End)
		}
	}
	for _, c := range evs.Comms {
		if c.Name != "split.exe" || (c.Tid != 7 && c.Tid != 101) {
			t.Errorf("comm %+v", c)
		}
	}
	if len(evs.Maps) != 1 || len(evs.Comms) != 2 || len(evs.Samples) != 0 {
		t.Fatalf("first tick: %d maps, %d comms, %d samples: %v", len(evs.Maps), len(evs.Comms), len(evs.Samples), evs.Events)
	}
	// Threads there at the start are sampled once their CPU time moves,
	// which is read every suspendIdleTimesEvery while they idle.
	evs.Reset()
	p.ths[101].cpuNS = 10e6
	clock.tick(s, false, false, suspendIdleTimesEvery/2)
	if len(evs.Events) != 0 {
		t.Fatalf("sampled before its CPU time was read again: %v", evs.Events)
	}
	clock.tick(s, false, false, suspendIdleTimesEvery/2)
	if len(evs.Events) != 1 {
		t.Fatalf("second tick: %v", evs.Events)
	}
	sm := evs.Events[0].(*event.Sample)
	if sm.Tid != 101 || sm.CPUDelta != 10e6 || !slices.Equal(sm.Stack, []uint64{0x140001000, 0x140001100, 0x140001200}) {
		t.Fatalf("sample %+v stack %#x", sm, sm.Stack)
	}
	// A thread whose CPU time did not move but whose registers did (any
	// of them: here not the PC) is running between two steps of its
	// times (they move in clock-tick steps): it is sampled for
	// suspendActiveFor, then not.
	evs.Reset()
	ms := int(suspendActiveFor / time.Millisecond)
	for range ms + 10 {
		p.ths[101].rax++
		clock.tick(s, false, false, time.Millisecond)
	}
	if n := len(evs.Events); n != ms {
		t.Errorf("%d samples of a thread between CPU steps, want %d", n, ms)
	}
	// One whose registers did not move either is blocked: no sample.
	p.ths[101].cpuNS += 10e6
	evs.Reset()
	clock.tick(s, false, false, suspendIdleTimesEvery)
	if len(evs.Events) != 1 || evs.Events[0].(*event.Sample).CPUDelta != 10e6 {
		t.Fatalf("a thread whose CPU time moved: %v", evs.Events)
	}
	evs.Reset()
	for range 5 {
		clock.tick(s, false, false, time.Millisecond)
	}
	if len(evs.Events) != 0 {
		t.Errorf("%d samples of a blocked thread, want none", len(evs.Events))
	}
	// A module loaded later is listed at the next tick after a stack that
	// found no module (suspendStaleEvery after the last module list).
	p.mods = append(p.mods, winModule{Base: 0x7b000000, Size: 0x1000, Path: `C:\windows\system32\kernel32.dll`})
	p.ths[101].regs.IP = 0x7b000010
	evs.Reset()
	clock.tick(s, false, false, time.Millisecond)
	clock.tick(s, false, false, time.Millisecond)
	if !slices.ContainsFunc(evs.Events, func(e event.Event) bool { m, ok := e.(*event.Map); return ok && m.Start == 0x7b000000 }) {
		t.Fatalf("module loaded later not reported: %v", evs.Events)
	}
	// A thread exits, seen at the next thread list; then the process.
	evs.Reset()
	p.ids = p.ids[:1]
	clock.tick(s, true, false, suspendActiveFor)
	if len(evs.Events) != 1 || evs.Events[0].(*event.Exit).Tid != 101 || !p.ths[101].closed {
		t.Fatalf("exit: %v", evs.Events)
	}
	// A thread that appears between lists is found by newThreads, and
	// sampled from the next tick on: its CPU time counts from its start.
	p.ids = append(p.ids, 102)
	p.ths[102] = &fakeWinThread{p: p, id: 102, cpuNS: 5, regs: event.Regs{IP: 0x140001000, SP: 0x10000}}
	evs.Reset()
	clock.tick(s, false, false, suspendProbeEvery)
	clock.tick(s, false, false, time.Millisecond)
	if len(evs.Events) != 3 {
		t.Fatalf("new thread between lists: %v", evs.Events)
	}
	if f, ok := evs.Events[0].(*event.Fork); !ok || f.Tid != 102 {
		t.Fatalf("new thread: %v", evs.Events)
	}
	if sm, ok := evs.Events[2].(*event.Sample); !ok || sm.Tid != 102 || sm.CPUDelta != 5 {
		t.Fatalf("new thread's first sample: %v", evs.Events[2])
	}
	// Where newThreads finds nothing, a new thread waits for the next
	// list.
	p.noProbe = true
	p.ids = append(p.ids, 103)
	p.ths[103] = &fakeWinThread{p: p, id: 103, regs: event.Regs{IP: 0x140001000, SP: 0x10000}}
	evs.Reset()
	clock.tick(s, false, false, suspendProbeEvery)
	if slices.ContainsFunc(evs.Events, func(e event.Event) bool { f, ok := e.(*event.Fork); return ok && f.Tid == 103 }) {
		t.Fatalf("new thread reported before a list: %v", evs.Events)
	}
	clock.tick(s, true, false, time.Millisecond)
	if !slices.ContainsFunc(evs.Events, func(e event.Event) bool { f, ok := e.(*event.Fork); return ok && f.Tid == 103 }) {
		t.Fatalf("new thread not reported at a list: %v", evs.Events)
	}
	// A failed thread list while the process lives is not its end.
	p.listErr = errors.New("snapshot failed")
	if err := clock.tick(s, true, false, time.Millisecond); err != nil {
		t.Fatalf("tick with a failed thread list: %v", err)
	}
	p.listErr = nil
	// The process's exit ends it at any tick.
	p.dead = true
	if err := clock.tick(s, false, false, time.Millisecond); !errors.Is(err, suspendwalk.ErrTaskGone) {
		t.Fatalf("tick of a gone process: %v", err)
	}
}

// TestSuspendSamplerAlwaysResumes: a failing or panicking context read
// still resumes the thread.
func TestSuspendSamplerAlwaysResumes(t *testing.T) {
	p := newFakeWinProc()
	clock := &fakeClock{ns: 1e9}
	s := newSuspendSampler(p, 7, 4096, func(event.Event) {}, clock.now)
	s.tick(true, false)
	p.ths[100].cpuNS, p.ths[101].cpuNS = 1, 1
	p.ths[100].ctxErr = errors.New("access denied")
	p.panicOn = 101
	func() {
		defer func() { recover() }()
		clock.tick(s, true, false, suspendIdleTimesEvery)
	}()
	for id, th := range p.ths {
		if th.suspended != 0 {
			t.Errorf("thread %d left suspended %d times", id, th.suspended)
		}
	}
	if !suspendwalk.Mu.TryLock() {
		t.Fatal("suspendMu still held")
	}
	suspendwalk.Mu.Unlock()
}

// TestSuspendReadStack: the copy ends at the thread's stack base, and
// when the read fails, at the last readable page.
func TestSuspendReadStack(t *testing.T) {
	p := &fakeWinProc{stackBase: 0x10000, mem: make([]byte, 3*suspendwalk.StackPage)}
	s := newSuspendSampler(p, 1, 64<<10, nil, nil)
	if got := len(s.readStack(0x10010, 0x10000+3*suspendwalk.StackPage, s.slots[0])); got != 3*suspendwalk.StackPage-0x10 {
		t.Errorf("copy to the stack base: %d bytes", got)
	}
	// Stack base unknown: the read of 64K fails, and the search finds
	// the end of the readable pages.
	if got := len(s.readStack(0x10010, 0, s.slots[0])); got != 3*suspendwalk.StackPage-0x10 {
		t.Errorf("copy without a stack base: %d bytes", got)
	}
}

// TestSuspendSamplerAsyncModules: with async reads, a module's Map comes
// at a tick after its file was read, and the tick did not wait for it.
func TestSuspendSamplerAsyncModules(t *testing.T) {
	p := newFakeWinProc()
	var evs eventtest.Collector
	s := newSuspendSampler(p, 7, 4096, evs.Handle, func() int64 { return 0 })
	release := make(chan struct{})
	s.loadModule = func(path string) (*unwind.PEImage, *objfile.Identity) {
		<-release
		return nil, &objfile.Identity{CodeID: "x"}
	}
	s.async = make(chan loadedModule)
	s.tick(true, true)
	if len(evs.Maps) != 0 || len(s.mods) != 1 {
		t.Fatalf("before the read: maps %v, modules %v", evs.Maps, s.mods)
	}
	close(release)
	for i := 0; i < 1000 && len(evs.Maps) == 0; i++ {
		time.Sleep(time.Millisecond)
		s.tick(false, false)
	}
	if len(evs.Maps) != 1 || evs.Maps[0].Image == nil || evs.Maps[0].Image.CodeID != "x" {
		t.Fatalf("after the read: %v", evs.Maps)
	}
	s.close()
}

// TestSuspendSamplerDefersUntilTables: samples taken while module tables
// are being read are held, with copies of their stacks, and unwound in
// the order taken once the tables are in (without the tables, frames in
// that module unwind as leaves and stacks come out cut short); close and
// gone wait for reads under way so as to unwind what they still hold, and
// gone emits those samples before the threads' exits.
func TestSuspendSamplerDefersUntilTables(t *testing.T) {
	for _, end := range []string{"tick", "close", "gone"} {
		p := newFakeWinProc()
		var events eventtest.Collector
		clock := &fakeClock{ns: 1e9}
		s := newSuspendSampler(p, 7, 4096, events.Handle, clock.now)
		release := make(chan struct{})
		s.loadModule = func(path string) (*unwind.PEImage, *objfile.Identity) {
			<-release
			return nil, &objfile.Identity{CodeID: "x"}
		}
		s.async = make(chan loadedModule)
		for i := 0; i < 3; i++ {
			for _, th := range p.ths {
				th.cpuNS += 1e6
				th.rax++
			}
			clock.tick(s, i == 0, i == 0, suspendIdleTimesEvery)
		}
		held := len(events.Samples)
		n := len(s.deferred)
		if held != 0 || n < 4 {
			t.Fatalf("while reading: %d samples out, %d held; want none out, 4 or more held", held, n)
		}
		// The stack changes after the samples were taken: they must show
		// what it held then.
		binary.LittleEndian.PutUint64(p.mem[0:], 0x140009999)
		close(release)
		switch end {
		case "close":
			s.close()
		case "gone":
			s.gone()
		default:
			for i := 0; i < 1000 && len(s.deferred) > 0; i++ {
				time.Sleep(time.Millisecond)
				s.tick(false, false)
			}
		}
		var times []int64
		mapAt, exited := -1, false
		for i, e := range events.Events {
			switch e := e.(type) {
			case *event.Map:
				mapAt = i
			case *event.Exit:
				exited = true
			case *event.Sample:
				if len(times) < n {
					times = append(times, e.Time)
					if want := []uint64{0x140001000, 0x140001100, 0x140001200}; !slices.Equal(e.Stack, want) {
						t.Errorf("%s: sample stack %x, want %x", end, e.Stack, want)
					}
					if mapAt < 0 {
						t.Errorf("%s: a held sample came before its module's Map", end)
					}
					if exited {
						t.Errorf("%s: a held sample came after an exit", end)
					}
				}
			}
		}
		if len(times) != n || !slices.IsSorted(times) {
			t.Errorf("%s: held samples out at times %v, want %d in order", end, times, n)
		}
		if end == "tick" {
			s.close()
		}
	}
}

// busyFakeWinProc has n threads (ids 100...) that all run: each tick
// moves their registers and, every so often, their CPU time.
func busyFakeWinProc(n int) *fakeWinProc {
	p := newFakeWinProc()
	p.ids = nil
	p.ths = map[uint32]*fakeWinThread{}
	for i := range n {
		id := uint32(100 + i)
		p.ids = append(p.ids, id)
		p.ths[id] = &fakeWinThread{p: p, id: id, regs: event.Regs{IP: 0x140001000, SP: 0x10000}}
	}
	return p
}

func (p *fakeWinProc) run(d time.Duration) {
	for _, th := range p.ths {
		th.cpuNS += int64(d)
		th.rax++
	}
}

// TestSuspendSamplerBatches: the threads sampled at a tick are all
// suspended before any is read, and all resumed after; with more threads
// than a batch holds, one batch is resumed before the next is
// suspended.
func TestSuspendSamplerBatches(t *testing.T) {
	p := busyFakeWinProc(3)
	var evs eventtest.Collector
	clock := &fakeClock{ns: 1e9}
	s := newSuspendSampler(p, 7, 4096, evs.Handle, clock.now)
	s.tick(true, false)
	p.run(10 * time.Millisecond)
	clock.tick(s, false, false, suspendIdleTimesEvery)
	var ops []string
	p.ops = &ops
	p.run(10 * time.Millisecond)
	clock.tick(s, false, false, time.Millisecond)
	want := []string{"suspend 100", "suspend 101", "suspend 102", "context 100", "context 101", "context 102", "resume 100", "resume 101", "resume 102"}
	if !slices.Equal(ops, want) {
		t.Errorf("calls %q, want %q", ops, want)
	}
	if n := len(evs.Events); n != 1+3+6 { // the module, 3 comms, then 3 samples twice
		t.Errorf("%d events, want a map, 3 comms and 6 samples: %v", n, evs.Events)
	}

	p = busyFakeWinProc(40)
	s = newSuspendSampler(p, 7, 4096, func(event.Event) {}, clock.now)
	s.tick(true, false)
	p.run(10 * time.Millisecond)
	clock.tick(s, false, false, suspendIdleTimesEvery)
	if s.samples != 40 || p.maxHeld != len(s.caps) || p.held != 0 {
		t.Errorf("40 threads: %d samples, %d suspended at once (batch %d), %d left suspended", s.samples, p.maxHeld, len(s.caps), p.held)
	}
}

// TestSuspendSamplerBatchResumes: every thread a batch suspended is
// resumed, whatever fails: a suspend, a context read, a context read that
// panics, a resume that panics; and the lock Settle waits for is let go.
func TestSuspendSamplerBatchResumes(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(p *fakeWinProc)
		panic bool
		// samples is how many of the 4 threads give one
		samples int
	}{
		{"suspend fails", func(p *fakeWinProc) { p.ths[101].suspErr = errors.New("gone") }, false, 3},
		{"context fails", func(p *fakeWinProc) { p.ths[102].ctxErr = errors.New("denied") }, false, 3},
		{"context panics", func(p *fakeWinProc) { p.panicOn = 101 }, true, 0},
		{"resume panics", func(p *fakeWinProc) { p.panicResumeOn = 100 }, true, 0},
		{"last resume panics", func(p *fakeWinProc) { p.panicResumeOn = 103 }, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := busyFakeWinProc(4)
			clock := &fakeClock{ns: 1e9}
			s := newSuspendSampler(p, 7, 4096, func(event.Event) {}, clock.now)
			s.tick(true, false)
			p.run(10 * time.Millisecond)
			c.setup(p)
			var ops []string
			p.ops = &ops
			var got any
			func() {
				defer func() { got = recover() }()
				clock.tick(s, false, false, suspendIdleTimesEvery)
			}()
			if (got != nil) != c.panic {
				t.Errorf("panic %v, want one: %v", got, c.panic)
			}
			for id, th := range p.ths {
				if th.suspended != 0 {
					t.Errorf("thread %d left suspended %d times", id, th.suspended)
				}
				if th.suspErr == nil && !slices.Contains(ops, fmt.Sprintf("resume %d", id)) {
					t.Errorf("thread %d not resumed: %q", id, ops)
				}
			}
			if !c.panic && s.samples != c.samples {
				t.Errorf("%d samples, want %d", s.samples, c.samples)
			}
			if !suspendwalk.Mu.TryLock() {
				t.Fatal("suspendwalk.Mu still held")
			}
			suspendwalk.Mu.Unlock()
		})
	}
}

// TestSuspendSamplerReadsTimesSeldom: a thread's CPU time is read every
// suspendTimesEvery while it runs and every suspendIdleTimesEvery while
// it idles, not every tick (under Wine each read is a round trip to
// wineserver); the samples still carry all of it.
func TestSuspendSamplerReadsTimesSeldom(t *testing.T) {
	p := busyFakeWinProc(2)
	var evs eventtest.Collector
	clock := &fakeClock{ns: 1e9}
	s := newSuspendSampler(p, 7, 4096, evs.Handle, clock.now)
	s.execd = true
	s.tick(true, false)
	idle := p.ths[101]
	busy := p.ths[100]
	reads0 := busy.cpuReads
	const ticks = 1000
	for range ticks {
		busy.cpuNS += int64(time.Millisecond)
		busy.rax++
		clock.tick(s, false, false, time.Millisecond)
	}
	if n, want := busy.cpuReads-reads0, ticks/int(suspendTimesEvery/time.Millisecond); n > want+1 || n < want-1 {
		t.Errorf("busy thread's time read %d times in %d ms, want %d", n, ticks, want)
	}
	if n, want := idle.cpuReads, ticks/int(suspendIdleTimesEvery/time.Millisecond); n > want+2 {
		t.Errorf("idle thread's time read %d times in %d ms, want %d", n, ticks, want)
	}
	var n int
	var cpu int64
	for _, sm := range evs.Samples {
		if sm.Tid == 7 {
			n++
			cpu += sm.CPUDelta
		}
	}
	if n != ticks || time.Duration(cpu) < (ticks-10)*time.Millisecond {
		t.Errorf("busy thread: %d samples with %v of CPU in %d ticks", n, time.Duration(cpu), ticks)
	}
}

// TestSuspendSamplerAsyncLists: with asyncLists a list is taken on
// another goroutine and reconciled at a later tick; a thread found by
// newThreads while the list was under way is not dropped for missing
// from it.
func TestSuspendSamplerAsyncLists(t *testing.T) {
	p := newFakeWinProc()
	var evs eventtest.Collector
	clock := &fakeClock{ns: 1e9}
	s := newSuspendSampler(p, 7, 4096, evs.Handle, clock.now)
	s.asyncLists, s.lists = true, make(chan listResult)
	s.tick(true, false) // the first list is taken at once
	if len(s.threads) != 2 {
		t.Fatalf("first list: %d threads", len(s.threads))
	}
	// The lists the goroutine takes see the process as it was: hold one
	// back while a thread starts.
	var mu sync.Mutex
	listed := []uint32{100}
	s.proc = &listProc{fakeWinProc: p, mu: &mu, ids: &listed}
	mu.Lock()
	clock.tick(s, true, false, time.Millisecond) // asks for a list
	p.ids = append(p.ids, 102)
	p.ths[102] = &fakeWinThread{p: p, id: 102, regs: event.Regs{IP: 0x140001000, SP: 0x10000}}
	clock.tick(s, false, false, suspendProbeEvery) // finds 102
	if s.threads[102] == nil {
		t.Fatal("newThreads' thread not added")
	}
	mu.Unlock()
	for i := 0; i < 1000 && s.listing; i++ {
		time.Sleep(time.Millisecond)
		clock.tick(s, false, false, time.Millisecond)
	}
	if s.listing {
		t.Fatal("the list never came")
	}
	if s.threads[102] == nil {
		t.Error("a thread found after the list was asked for was dropped for missing from it")
	}
	if s.threads[101] != nil {
		t.Error("a thread missing from the list is still there")
	}
	s.close()
}

// listProc answers threads with ids, under mu.
type listProc struct {
	*fakeWinProc
	mu  *sync.Mutex
	ids *[]uint32
}

func (p *listProc) threads() ([]uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(*p.ids), nil
}

// TestSuspendSamplerHoldsWithoutModules: a command started suspended has
// no module list until its loader has run; samples taken before a list
// finds the modules are held and unwound once it has.
func TestSuspendSamplerHoldsWithoutModules(t *testing.T) {
	p := busyFakeWinProc(1)
	mods := p.mods
	p.mods = nil
	var evs eventtest.Collector
	clock := &fakeClock{ns: 1e9}
	s := newSuspendSampler(p, 7, 4096, evs.Handle, clock.now)
	s.execd = true
	s.tick(true, true)
	for range 3 {
		p.run(time.Millisecond)
		clock.tick(s, false, false, time.Millisecond)
	}
	if s.samples != 3 || len(s.deferred) != 3 {
		t.Fatalf("%d samples, %d held; want 3 held", s.samples, len(s.deferred))
	}
	p.mods = mods
	// The modules are listed again suspendStaleEvery after a failed list.
	clock.tick(s, false, false, suspendStaleEvery-3*time.Millisecond-1)
	if len(s.mods) != 0 {
		t.Fatal("modules listed again before suspendStaleEvery")
	}
	clock.tick(s, false, false, time.Millisecond)
	clock.tick(s, false, false, time.Millisecond)
	var deep int
	for _, sm := range evs.Samples {
		if len(sm.Stack) == 3 {
			deep++
		}
	}
	if deep < 3 {
		t.Errorf("%d samples unwound through the module, want 3 or more: %v", deep, evs.Samples)
	}
}

// TestSuspendSamplerWindowWork: a tick's other calls (newThreads, the CPU
// times of threads that did not run lately) are made while its first
// batch holds its threads (under Wine, wineserver then has a CPU), or
// without a batch when no thread ran.
func TestSuspendSamplerWindowWork(t *testing.T) {
	p := busyFakeWinProc(2)
	clock := &fakeClock{ns: 1e9}
	s := newSuspendSampler(p, 7, 4096, func(event.Event) {}, clock.now)
	s.execd = true // 100 runs, 101 idles
	s.tick(true, false)
	var ops []string
	p.ops, p.logReads = &ops, true
	p.ths[100].run()
	clock.tick(s, false, false, suspendIdleTimesEvery)
	want := []string{"suspend 100", "cpu 100", "cpu 101", "probe 0", "context 100", "resume 100"}
	if !slices.Equal(ops, want) {
		t.Errorf("calls %q, want %q", ops, want)
	}
	// No thread ran: the reads without a batch, and a thread seen to run
	// is sampled at once.
	ops = nil
	p.ths[101].run()
	clock.tick(s, false, false, suspendActiveFor+suspendIdleTimesEvery)
	want = []string{"cpu 100", "cpu 101", "probe 0", "suspend 101", "context 101", "resume 101"}
	if !slices.Equal(ops, want) {
		t.Errorf("calls %q, want %q", ops, want)
	}
}

func (t *fakeWinThread) run() {
	t.cpuNS += int64(10 * time.Millisecond)
	t.rax++
}

// TestSuspendSamplerStartingThreads: a thread not through its start (a
// capture of it took long) is captured in a batch of its own, after the
// others, and that time is counted apart, not as the cost of sampling;
// once a capture of it is quick it joins the others.
func TestSuspendSamplerStartingThreads(t *testing.T) {
	p := busyFakeWinProc(2)
	clock := &fakeClock{ns: 1e9}
	p.clock = clock
	s := newSuspendSampler(p, 7, 4096, func(event.Event) {}, clock.now)
	s.tick(true, false)
	p.run(10 * time.Millisecond)
	clock.tick(s, false, false, suspendIdleTimesEvery) // 100 and 101 settle
	p.ids = append(p.ids, 102)
	p.ths[102] = &fakeWinThread{p: p, id: 102, regs: event.Regs{IP: 0x140001000, SP: 0x10000}, slowStops: 2}
	clock.tick(s, false, false, suspendProbeEvery) // finds 102
	var ops []string
	p.ops = &ops
	for i, want := range [][]string{
		{"suspend 100", "suspend 101", "context 100", "context 101", "resume 100", "resume 101", "suspend 102", "context 102", "resume 102"},
		{"suspend 100", "suspend 101", "context 100", "context 101", "resume 100", "resume 101", "suspend 102", "context 102", "resume 102"},
		{"suspend 100", "suspend 101", "context 100", "context 101", "resume 100", "resume 101", "suspend 102", "context 102", "resume 102"},
		{"suspend 100", "suspend 101", "suspend 102", "context 100", "context 101", "context 102", "resume 100", "resume 101", "resume 102"},
	} {
		ops = nil
		start := s.startWork
		p.run(time.Millisecond)
		clock.tick(s, false, false, time.Millisecond)
		if !slices.Equal(ops, want) {
			t.Errorf("tick %d: calls %q, want %q", i, ops, want)
		}
		if got, want := time.Duration(s.startWork-start), map[bool]time.Duration{true: 20 * time.Millisecond}[i < 2]; got != want {
			t.Errorf("tick %d: %v counted as starting threads' captures, want %v", i, got, want)
		}
	}
}

// TestSuspendSamplerLongIntervals: with ticks further apart than
// suspendActiveFor (the pacer's interval under Wine on a busy machine:
// 53 ms in one CI run, 26 to 80 ms with its jitter), a thread that runs
// is sampled at every tick, and one that paused for a tick from the tick
// after next: its CPU time, read apart from the others' once it looks
// idle, must bring it back although it last moved more than
// suspendActiveFor before.
func TestSuspendSamplerLongIntervals(t *testing.T) {
	for _, spacings := range [][]time.Duration{{20}, {60}, {200}, {40, 60}, {30, 70, 45, 75, 28, 65, 52, 80, 40, 60}} {
		p := busyFakeWinProc(3)
		var evs eventtest.Collector
		clock := &fakeClock{ns: 1e9}
		s := newSuspendSampler(p, 7, 4096, evs.Handle, clock.now)
		s.tick(true, false)
		paused := p.ths[101]
		const ticks, from, pause = 60, 10, 20
		var since int64
		for i := range ticks {
			d := spacings[i%len(spacings)] * time.Millisecond
			p.run(d)
			if i == pause {
				paused.cpuNS -= int64(d) // asleep for this one
				paused.rax--
			}
			if i == from {
				since = clock.now() + int64(d)
			}
			if err := clock.tick(s, false, false, d); err != nil {
				t.Fatal(err)
			}
		}
		n := map[int]int{}
		for _, sm := range evs.Samples {
			if sm.Time >= since {
				n[sm.Tid]++
			}
		}
		for tid, want := range map[int]int{7: ticks - from, 101: ticks - from - 2, 102: ticks - from} {
			if n[tid] < want {
				t.Errorf("ticks %v ms apart: thread %d got %d samples in the last %d ticks, want %d at least", spacings, tid, n[tid], ticks-from, want)
			}
		}
	}
}
