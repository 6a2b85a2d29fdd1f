package mach

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/attach/internal/suspendwalk"
	"github.com/gprof-dev/gprof/event"
)

// fakeRegion is target memory at addr.
type fakeRegion struct {
	addr uint64
	data []byte
}

// fakeThread is a thread of a fakeTask.
type fakeThread struct {
	id      uint64
	name    string
	cpu     int64 // ns
	running bool
	dead    bool
	regs    event.Regs
}

// fakeTask is a Mach task as the kernel would present it to gprof, which
// keeps the books a real one would: the user references gprof holds on
// each port name, and the suspend count of each thread.
type fakeTask struct {
	t      *testing.T
	mem    []fakeRegion
	live   []*fakeThread // in creation order
	names  map[*fakeThread]uint32
	byName map[uint32]*fakeThread
	refs   map[uint32]int
	next   uint32
	susp   map[uint32]int

	failState, panicState, failResume bool
	gone                              bool
	reads                             int
}

func newFakeTask(t *testing.T) *fakeTask {
	return &fakeTask{t: t, names: map[*fakeThread]uint32{}, byName: map[uint32]*fakeThread{},
		refs: map[uint32]int{}, next: 0x1003, susp: map[uint32]int{}}
}

func (f *fakeTask) threads() ([]uint32, error) {
	if f.gone {
		return nil, suspendwalk.ErrTaskGone
	}
	var out []uint32
	for _, th := range f.live {
		n, ok := f.names[th]
		if !ok {
			n = f.next
			f.next += 0x100
			f.names[th], f.byName[n] = n, th
		}
		f.refs[n]++
		out = append(out, n)
	}
	return out, nil
}

func (f *fakeTask) deallocate(p uint32) {
	f.refs[p]--
	switch {
	case f.refs[p] < 0:
		f.t.Errorf("port %#x deallocated more often than it was given", p)
	case f.refs[p] == 0:
		// The name is free: the kernel may give the thread another one.
		delete(f.refs, p)
		delete(f.names, f.byName[p])
		delete(f.byName, p)
	}
}

func (f *fakeTask) thread(p uint32) (*fakeThread, error) {
	th := f.byName[p]
	if th == nil || f.refs[p] <= 0 {
		f.t.Errorf("port %#x used without a reference", p)
		return nil, errors.New("invalid name")
	}
	if th.dead {
		return nil, errors.New("thread terminated")
	}
	return th, nil
}

func (f *fakeTask) suspend(p uint32) error {
	if _, err := f.thread(p); err != nil {
		return err
	}
	f.susp[p]++
	return nil
}

func (f *fakeTask) resume(p uint32) error {
	f.susp[p]--
	if f.susp[p] < 0 {
		f.t.Errorf("thread %#x resumed more often than suspended", p)
	}
	if f.failResume {
		return errors.New("resume failed")
	}
	return nil
}

func (f *fakeTask) state(p, flavor uint32, buf []byte) error {
	th, err := f.thread(p)
	if err != nil {
		return err
	}
	if f.susp[p] <= 0 {
		f.t.Errorf("registers of thread %#x read while it runs", p)
	}
	if f.panicState {
		panic("thread_get_state blew up")
	}
	if f.failState {
		return errors.New("thread_get_state failed")
	}
	// arm64 layout
	binary.LittleEndian.PutUint64(buf[29*8:], th.regs.FP)
	binary.LittleEndian.PutUint64(buf[30*8:], th.regs.LR)
	binary.LittleEndian.PutUint64(buf[31*8:], th.regs.SP)
	binary.LittleEndian.PutUint64(buf[32*8:], th.regs.IP)
	return nil
}

func (f *fakeTask) info(p, flavor uint32, buf []byte) error {
	th, err := f.thread(p)
	if err != nil {
		return err
	}
	clear(buf)
	switch flavor {
	case threadBasicInfo:
		us := th.cpu / 1000
		binary.LittleEndian.PutUint32(buf[0:], uint32(us/1e6))
		binary.LittleEndian.PutUint32(buf[4:], uint32(us%1e6))
		state := int32(3)
		if th.running {
			state = thRunRunning
		}
		binary.LittleEndian.PutUint32(buf[24:], uint32(state))
	case threadIdentifierInfo:
		binary.LittleEndian.PutUint64(buf, th.id)
	case threadExtendedInfo:
		copy(buf[48:], th.name)
	default:
		return fmt.Errorf("flavor %d", flavor)
	}
	return nil
}

func (f *fakeTask) read(addr uint64, buf []byte) error {
	f.reads++
	for _, r := range f.mem {
		if addr >= r.addr && addr+uint64(len(buf)) <= r.addr+uint64(len(r.data)) {
			copy(buf, r.data[addr-r.addr:])
			return nil
		}
	}
	return fmt.Errorf("no memory at %#x+%d", addr, len(buf))
}

// checkBooks fails unless every reference was given back and every
// suspension undone.
func (f *fakeTask) checkBooks() {
	f.t.Helper()
	for p, n := range f.refs {
		f.t.Errorf("port %#x: %d references leaked", p, n)
	}
	for p, n := range f.susp {
		if n != 0 {
			f.t.Errorf("thread %#x left with suspend count %d", p, n)
		}
	}
}

type eventLog struct{ evs []string }

func (l *eventLog) emit(e event.Event) {
	switch e := e.(type) {
	case *event.Sample:
		l.evs = append(l.evs, fmt.Sprintf("sample %d cpu=%d %x", e.Tid, e.CPUDelta, e.Stack))
	case *event.Fork:
		l.evs = append(l.evs, fmt.Sprintf("fork %d", e.Tid))
	case *event.Exit:
		l.evs = append(l.evs, fmt.Sprintf("exit %d", e.Tid))
	case *event.Comm:
		l.evs = append(l.evs, fmt.Sprintf("comm %d %s exec=%v", e.Tid, e.Name, e.Exec))
	case *event.Map:
		l.evs = append(l.evs, fmt.Sprintf("map %#x-%#x %s %s", e.Start, e.End, e.Path, e.Image.BreakpadID))
	}
}

func (l *eventLog) take() []string {
	evs := l.evs
	l.evs = nil
	return evs
}

const stackBase = 0x16f000000

func newTestSampler(task *fakeTask, log *eventLog) *machSampler {
	// One stack for every thread: a frame record at +0x10 returning to
	// 0x100000200, the chain's end at +0x20.
	stack := make([]byte, 0x4000)
	binary.LittleEndian.PutUint64(stack[0x10:], stackBase+0x20)
	binary.LittleEndian.PutUint64(stack[0x18:], 0x100000200)
	task.mem = append(task.mem, fakeRegion{stackBase, stack})
	s := newMachSampler(task, suspendwalk.ARM64, 50, 0x8000, log.emit, func() int64 { return 1 })
	s.minRun = 100_000
	s.procName = "app"
	return s
}

func TestMachSamplerThreadsAndCPU(t *testing.T) {
	task := newFakeTask(t)
	regs := event.Regs{IP: 0x100000100, SP: stackBase, FP: stackBase + 0x10}
	main := &fakeThread{id: 901, cpu: 5e6, running: true, regs: regs}
	worker := &fakeThread{id: 902, name: "worker", cpu: 1e6, regs: regs}
	task.live = []*fakeThread{main, worker}
	log := &eventLog{}
	s := newTestSampler(task, log)
	s.argv, s.execd = []string{"app"}, true

	// First tick: the threads there are named, not forked; the main thread
	// takes the pid as its tid; CPU time counts from now, so the running
	// main thread is sampled with a zero delta and the sleeping worker not
	// at all.
	if err := s.tick(false); err != nil {
		t.Fatal(err)
	}
	want := []string{"comm 50 app exec=true", "comm 902 worker exec=false", "sample 50 cpu=0 [100000100 100000200]"}
	if got := log.take(); !slices.Equal(got, want) {
		t.Errorf("first tick:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The worker ran a little while asleep at the tick: not enough for a
	// sample, so its time waits for the next one.
	main.cpu += 1e6
	worker.cpu += 50_000
	s.tick(false)
	if got := log.take(); !slices.Equal(got, []string{"sample 50 cpu=1000000 [100000100 100000200]"}) {
		t.Errorf("second tick: %q", got)
	}
	worker.cpu += 60_000
	born := &fakeThread{id: 903, cpu: 2e6, running: true, regs: regs}
	task.live = append(task.live, born)
	s.tick(false)
	want = []string{"fork 903", "comm 903 app exec=false", // unnamed: the process's name
		"sample 50 cpu=0 [100000100 100000200]",        // running, though it used no CPU
		"sample 902 cpu=110000 [100000100 100000200]",  // both bursts
		"sample 903 cpu=2000000 [100000100 100000200]", // all of a new thread's time counts
	}
	if got := log.take(); !slices.Equal(got, want) {
		t.Errorf("third tick:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The worker exits (its port is now a dead name gprof still holds),
	// the main thread renames itself; a slow tick sees the name.
	worker.dead = true
	task.live = []*fakeThread{main, born}
	main.name = "main-loop"
	main.running, born.running = false, false
	s.tick(true)
	if got := log.take(); !slices.Equal(got, []string{"exit 902", "comm 50 main-loop exec=false"}) {
		t.Errorf("fourth tick: %q", got)
	}

	// The task goes: every thread exits, the main one (the process) last.
	task.gone = true
	if err := s.tick(false); !errors.Is(err, suspendwalk.ErrTaskGone) {
		t.Fatalf("tick on a gone task: %v", err)
	}
	s.gone()
	if got := log.take(); !slices.Equal(got, []string{"exit 903", "exit 50"}) {
		t.Errorf("end: %q", got)
	}
	task.checkBooks()
}

// Whatever goes wrong while a thread is suspended, it is resumed, and no
// port reference outlives the recording: over many ticks, with threads
// coming and going, with failing reads, a failing thread_get_state, and a
// panic in the middle of a sample.
func TestMachSamplerNeverLeaksOrLeavesSuspended(t *testing.T) {
	task := newFakeTask(t)
	log := &eventLog{}
	s := newTestSampler(task, log)
	regs := event.Regs{IP: 0x100000100, SP: stackBase, FP: stackBase + 0x10}
	var all []*fakeThread
	for i := 0; i < 200; i++ {
		// Threads come and go.
		if i%3 == 0 {
			th := &fakeThread{id: uint64(1000 + i), running: true, regs: regs}
			all = append(all, th)
			task.live = append(task.live, th)
		}
		if i%7 == 0 && len(task.live) > 2 {
			task.live[1].dead = true
			task.live = slices.Delete(task.live, 1, 2)
		}
		for _, th := range task.live {
			th.cpu += 1e6
		}
		task.failState = i%11 == 0
		// Registers pointing at no memory: the stack read fails.
		if i%13 == 0 {
			task.live[0].regs.SP = 0x1000
		} else {
			task.live[0].regs = regs
		}
		if err := s.tick(i%10 == 0); err != nil {
			t.Fatal(err)
		}
		for p, n := range task.susp {
			if n != 0 {
				t.Fatalf("tick %d: thread %#x left suspended", i, p)
			}
		}
		// Between ticks gprof holds exactly one reference per thread it
		// knows, dead ones included until it notices them.
		for p, n := range task.refs {
			if n != 1 {
				t.Fatalf("tick %d: port %#x has %d references", i, p, n)
			}
		}
	}
	if s.samples == 0 {
		t.Fatal("no samples")
	}

	task.failState = false
	task.panicState = true
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not get through")
			}
		}()
		s.tick(false)
	}()
	for p, n := range task.susp {
		if n != 0 {
			t.Errorf("after a panic: thread %#x left suspended", p)
		}
	}
	if !suspendwalk.Mu.TryLock() {
		t.Fatal("a panic left the suspension lock held")
	}
	suspendwalk.Mu.Unlock()
	s.close()
	task.checkBooks()
}

// A stack read that would cross into unmapped memory is shortened to the
// part that is mapped, ending at a page boundary.
func TestMachReadStackShortens(t *testing.T) {
	task := newFakeTask(t)
	s := newMachSampler(task, suspendwalk.ARM64, 1, 64<<10, func(event.Event) {}, func() int64 { return 0 })
	// 20 KiB of stack above sp = base+0x800: readable up to base+0x5000.
	task.mem = []fakeRegion{{stackBase, make([]byte, 0x5000)}}
	got := s.readStack(stackBase + 0x800)
	if want := 0x5000 - 0x800; len(got) != want {
		t.Errorf("read %#x bytes, want %#x", len(got), want)
	}
	if task.reads > 7 {
		t.Errorf("%d reads", task.reads)
	}
	if got := s.readStack(0x1000); got != nil {
		t.Errorf("read %d bytes of unmapped memory", len(got))
	}
}
