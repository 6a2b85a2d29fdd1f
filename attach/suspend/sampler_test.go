package suspend

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/suspendwalk"
	"github.com/gprof-dev/gprof/unwind"
)

type fakeWinThread struct {
	p         *fakeWinProc
	id        uint32
	cpuNS     int64
	regs      attach.Regs
	rax       uint64 // stands for the registers only the fingerprint sees
	ctxErr    error
	suspended int
	closed    bool
}

func (t *fakeWinThread) suspend() error { t.suspended++; return nil }
func (t *fakeWinThread) resume() error {
	if t.suspended == 0 {
		return errors.New("not suspended")
	}
	t.suspended--
	return nil
}
func (t *fakeWinThread) context() (attach.Regs, uint64, error) {
	if t.p.panicOn == t.id {
		panic("context")
	}
	return t.regs, t.regs.IP ^ t.rax, t.ctxErr
}
func (t *fakeWinThread) cpu() (int64, error) { return t.cpuNS, nil }
func (t *fakeWinThread) stackTop() uint64    { return t.p.stackBase + uint64(len(t.p.mem)) }
func (t *fakeWinThread) close()              { t.closed = true }

type fakeWinProc struct {
	ids       []uint32
	ths       map[uint32]*fakeWinThread
	mods      []winModule
	stackBase uint64
	mem       []byte
	panicOn   uint32
	reads     int
	dead      bool
	listErr   error
}

func (p *fakeWinProc) threads() ([]uint32, error) {
	if p.listErr != nil {
		return nil, p.listErr
	}
	return slices.Clone(p.ids), nil
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
		p.ths[id] = &fakeWinThread{p: p, id: id, regs: attach.Regs{IP: 0x140001000, SP: 0x10000}}
	}
	return p
}

// collectEvents returns a handler that appends events to evs, copying
// samples' stacks, which the sampler reuses.
func collectEvents(evs *[]attach.Event) func(attach.Event) {
	return func(e attach.Event) {
		if sm, ok := e.(*attach.Sample); ok {
			c := *sm
			c.Stack = slices.Clone(sm.Stack)
			e = &c
		}
		*evs = append(*evs, e)
	}
}

func TestSuspendSamplerTicks(t *testing.T) {
	p := newFakeWinProc()
	var evs []attach.Event
	clock := int64(0)
	s := newSuspendSampler(p, 7, 4096, collectEvents(&evs), func() int64 { clock++; return clock })
	if err := s.tick(true, false); err != nil {
		t.Fatal(err)
	}
	// First tick: the module, the two threads (main as the pid), no
	// sample (no CPU time moved yet).
	var maps, comms, samples int
	for _, e := range evs {
		switch e := e.(type) {
		case *attach.Map:
			maps++
			if e.Start != 0x140000000 || e.End != 0x140010000 {
				t.Errorf("map %#x-%#x", e.Start, e.End)
			}
		case *attach.Comm:
			comms++
			if e.Name != "split.exe" || (e.Tid != 7 && e.Tid != 101) {
				t.Errorf("comm %+v", e)
			}
		case *attach.Sample:
			samples++
		}
	}
	if maps != 1 || comms != 2 || samples != 0 {
		t.Fatalf("first tick: %d maps, %d comms, %d samples: %v", maps, comms, samples, evs)
	}
	evs = nil
	p.ths[101].cpuNS = 10e6
	if err := s.tick(true, false); err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("second tick: %v", evs)
	}
	sm := evs[0].(*attach.Sample)
	if sm.Tid != 101 || sm.CPUDelta != 10e6 || !slices.Equal(sm.Stack, []uint64{0x140001000, 0x140001100, 0x140001200}) {
		t.Fatalf("sample %+v stack %#x", sm, sm.Stack)
	}
	// A thread whose CPU time did not move but whose registers did (any
	// of them: here not the PC) is running between two steps of its
	// times (they move in clock-tick steps): it is sampled for a while,
	// then not.
	evs = nil
	for range suspendActiveTicks + 2 {
		p.ths[101].rax++
		s.tick(true, false)
	}
	if n := len(evs); n != suspendActiveTicks-1 {
		t.Errorf("%d samples of a thread between CPU steps, want %d", n, suspendActiveTicks-1)
	}
	// One whose registers did not move either is blocked: no sample.
	p.ths[101].cpuNS += 10e6
	s.tick(true, false)
	evs = nil
	for range 5 {
		s.tick(true, false)
	}
	if len(evs) != 0 {
		t.Errorf("%d samples of a blocked thread, want none", len(evs))
	}
	p.ths[101].regs.IP = 0x140001000
	// A module loaded later is listed at the next thread list after a
	// stack that found no module.
	p.mods = append(p.mods, winModule{Base: 0x7b000000, Size: 0x1000, Path: `C:\windows\system32\kernel32.dll`})
	p.ths[101].regs.IP = 0x7b000010
	p.ths[101].cpuNS += 10e6
	evs = nil
	s.tick(false, false)
	s.tick(true, false)
	if !slices.ContainsFunc(evs, func(e attach.Event) bool { m, ok := e.(*attach.Map); return ok && m.Start == 0x7b000000 }) {
		t.Fatalf("module loaded later not reported: %v", evs)
	}
	// A thread exits, seen at the next thread list; then the process.
	evs = nil
	p.ids = p.ids[:1]
	s.tick(true, false)
	if len(evs) != 1 || evs[0].(*attach.Exit).Tid != 101 || !p.ths[101].closed {
		t.Fatalf("exit: %v", evs)
	}
	// A thread that appears between lists waits for the next list.
	p.ids = append(p.ids, 102)
	p.ths[102] = &fakeWinThread{p: p, id: 102, cpuNS: 5}
	evs = nil
	s.tick(false, false)
	if len(evs) != 0 {
		t.Fatalf("new thread reported before a list: %v", evs)
	}
	s.tick(true, false)
	if len(evs) < 2 {
		t.Fatalf("new thread at a list: %v", evs)
	}
	if f, ok := evs[0].(*attach.Fork); !ok || f.Tid != 102 {
		t.Fatalf("new thread: %v", evs)
	}
	// A failed thread list while the process lives is not its end.
	p.listErr = errors.New("snapshot failed")
	if err := s.tick(true, false); err != nil {
		t.Fatalf("tick with a failed thread list: %v", err)
	}
	p.listErr = nil
	p.dead = true
	if err := s.tick(true, false); !errors.Is(err, suspendwalk.ErrTaskGone) {
		t.Fatalf("tick of a gone process: %v", err)
	}
}

// TestSuspendSamplerAlwaysResumes: a failing or panicking context read
// still resumes the thread.
func TestSuspendSamplerAlwaysResumes(t *testing.T) {
	p := newFakeWinProc()
	s := newSuspendSampler(p, 7, 4096, func(attach.Event) {}, func() int64 { return 0 })
	s.tick(true, false)
	p.ths[100].cpuNS, p.ths[101].cpuNS = 1, 1
	p.ths[100].ctxErr = errors.New("access denied")
	p.panicOn = 101
	func() {
		defer func() { recover() }()
		s.tick(true, false)
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
	if got := len(s.readStack(0x10010, 0x10000+3*suspendwalk.StackPage)); got != 3*suspendwalk.StackPage-0x10 {
		t.Errorf("copy to the stack base: %d bytes", got)
	}
	// Stack base unknown: the read of 64K fails, and the search finds
	// the end of the readable pages.
	if got := len(s.readStack(0x10010, 0)); got != 3*suspendwalk.StackPage-0x10 {
		t.Errorf("copy without a stack base: %d bytes", got)
	}
}

// TestSuspendSamplerAsyncModules: with async reads, a module's Map comes
// at a tick after its file was read, and the tick did not wait for it.
func TestSuspendSamplerAsyncModules(t *testing.T) {
	p := newFakeWinProc()
	var maps []*attach.Map
	s := newSuspendSampler(p, 7, 4096, func(e attach.Event) {
		if m, ok := e.(*attach.Map); ok {
			maps = append(maps, m)
		}
	}, func() int64 { return 0 })
	release := make(chan struct{})
	s.loadModule = func(path string) (*unwind.PEImage, *attach.Image) {
		<-release
		return nil, &attach.Image{CodeID: "x"}
	}
	s.async = make(chan loadedModule)
	s.tick(true, true)
	if len(maps) != 0 || len(s.mods) != 1 {
		t.Fatalf("before the read: maps %v, modules %v", maps, s.mods)
	}
	close(release)
	for i := 0; i < 1000 && len(maps) == 0; i++ {
		time.Sleep(time.Millisecond)
		s.tick(false, false)
	}
	if len(maps) != 1 || maps[0].Image == nil || maps[0].Image.CodeID != "x" {
		t.Fatalf("after the read: %v", maps)
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
		var events []attach.Event
		clock := int64(0)
		s := newSuspendSampler(p, 7, 4096, collectEvents(&events), func() int64 { clock++; return clock })
		release := make(chan struct{})
		s.loadModule = func(path string) (*unwind.PEImage, *attach.Image) {
			<-release
			return nil, &attach.Image{CodeID: "x"}
		}
		s.async = make(chan loadedModule)
		for i := 0; i < 3; i++ {
			for _, th := range p.ths {
				th.cpuNS += 1e6
				th.rax++
			}
			s.tick(i == 0, i == 0)
		}
		var held int
		for _, e := range events {
			if _, ok := e.(*attach.Sample); ok {
				held++
			}
		}
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
		for i, e := range events {
			switch e := e.(type) {
			case *attach.Map:
				mapAt = i
			case *attach.Exit:
				exited = true
			case *attach.Sample:
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
