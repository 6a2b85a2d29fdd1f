package mach

// The macOS sampler's logic, over a small interface to the Mach calls so
// that it runs (and is tested) on any OS: the live calls are in
// libsystem_darwin.go and record_darwin.go. Each tick it lists the task's
// threads, keeps one send right per known thread and drops the rest,
// reports new and exited threads, and for each thread that ran since its
// last sample suspends it just long enough to read its registers and a
// copy of its stack, then walks the frame pointers over the copy after
// resuming it.

import (
	"fmt"
	"slices"

	"github.com/gprof-dev/gprof/attach/internal/suspendwalk"
	"github.com/gprof-dev/gprof/event"
)

// machTask is the Mach interface of one target task. Thread ports are
// send rights in gprof's IPC space; every port threads returns holds one
// user reference the caller must give back with deallocate.
type machTask interface {
	threads() ([]uint32, error)
	deallocate(port uint32)
	suspend(thread uint32) error
	resume(thread uint32) error
	// state fills buf (count 32-bit words) with thread_get_state(flavor).
	state(thread, flavor uint32, buf []byte) error
	// info fills buf with thread_info(flavor).
	info(thread, flavor uint32, buf []byte) error
	// read copies target memory at addr into buf (mach_vm_read_overwrite)
	// and fails unless all of it was readable.
	read(addr uint64, buf []byte) error
}

// machThread is a thread the sampler knows, by the port name of the send
// right it keeps for it (a name stays the same while gprof holds a right,
// and is not reused while the thread's right, even a dead one, is held).
type machThread struct {
	port    uint32
	tid     int
	name    string
	lastCPU int64 // CPU ns at the last sample (or when first seen)
	gen     uint64
}

// machSampler samples the threads of one task.
type machSampler struct {
	task      machTask
	arch      suspendwalk.Arch
	pid       int
	emit      func(event.Event)
	now       func() int64
	minRun    int64 // CPU ns that makes a sleeping thread worth a sample
	maxFrames int

	threads map[uint32]*machThread
	gen     uint64
	started bool // the first tick has run

	stateBuf []byte
	infoBuf  []byte
	stack    []byte
	frames   []uint64
	sample   event.Sample

	suspended uint32 // the thread suspended right now, 0 if none (tests)
	samples   int

	// procName names the main thread when it has no name of its own;
	// argv and execd go with its first Comm (execd for a launched
	// command).
	procName string
	argv     []string
	execd    bool
}

func newMachSampler(task machTask, arch suspendwalk.Arch, pid int, stackSize int, emit func(event.Event), now func() int64) *machSampler {
	_, words := stateFlavor(arch)
	return &machSampler{
		task: task, arch: arch, pid: pid, emit: emit, now: now,
		maxFrames: 1024,
		threads:   map[uint32]*machThread{},
		stateBuf:  make([]byte, words*4),
		infoBuf:   make([]byte, threadExtendedInfoCount*4),
		stack:     make([]byte, stackSize),
	}
}

// close gives back the send rights the sampler keeps.
func (s *machSampler) close() {
	for p := range s.threads {
		s.task.deallocate(p)
		delete(s.threads, p)
	}
}

// gone reports the exit of every known thread and of the process.
func (s *machSampler) gone() {
	var tids []int
	for _, th := range s.sorted() {
		tids = append(tids, th.tid)
	}
	suspendwalk.EmitGone(s.emit, s.now(), s.pid, tids)
	s.close()
}

func (s *machSampler) sorted() []*machThread {
	return suspendwalk.ByTid(s.threads, func(th *machThread) int { return th.tid })
}

// tick reconciles the thread list and samples the threads that ran.
// slow also rereads thread names. It returns suspendwalk.ErrTaskGone when the task is.
func (s *machSampler) tick(slow bool) error {
	ports, err := s.task.threads()
	if err != nil {
		return err
	}
	if len(ports) == 0 {
		return suspendwalk.ErrTaskGone // a terminated task has no threads
	}
	s.gen++
	now := s.now()
	first := !s.started
	s.started = true
	// Every port in ports carries a reference: each is either kept (a new
	// thread) or given back at once, and a panic part way gives back the
	// ones not yet looked at.
	i := 0
	defer func() {
		for ; i < len(ports); i++ {
			s.task.deallocate(ports[i])
		}
	}()
	var fresh []*machThread
	for ; i < len(ports); i++ {
		p := ports[i]
		if th := s.threads[p]; th != nil {
			th.gen = s.gen
			s.task.deallocate(p)
			continue
		}
		th := &machThread{port: p, gen: s.gen}
		s.threads[p] = th // kept: close gives it back
		// task_threads lists threads in the order they were created, so
		// the first thread of the first tick is the main thread. It takes
		// the pid as its tid, as on Linux, which is how the rest of gprof
		// tells the main thread and the process's exit.
		if !s.identify(th, first, first && i == 0) {
			delete(s.threads, p)
			s.task.deallocate(p)
			continue
		}
		fresh = append(fresh, th)
	}
	for p, th := range s.threads {
		if th.gen != s.gen {
			if th.tid != s.pid { // the main thread's exit is the process's
				s.emit(&event.Exit{Time: now, Pid: s.pid, Tid: th.tid})
			}
			delete(s.threads, p)
			s.task.deallocate(p)
		}
	}
	slices.SortFunc(fresh, func(a, b *machThread) int { return a.tid - b.tid })
	for _, th := range fresh {
		suspendwalk.EmitNewThread(s.emit, now, s.pid, th.tid, th.name, first, s.argv, s.execd)
	}
	for _, th := range s.sorted() {
		if slow && !slices.Contains(fresh, th) {
			if name, ok := s.threadName(th.port); ok && name != "" && name != th.name {
				th.name = name
				s.emit(&event.Comm{Time: now, Pid: s.pid, Tid: th.tid, Name: name})
			}
		}
		s.sampleThread(th)
	}
	return nil
}

// identify reads a new thread's ID, name and CPU time so far; false if it
// is already gone. Threads there when sampling starts count their CPU
// time from then; threads created later from their start.
func (s *machSampler) identify(th *machThread, initial, main bool) bool {
	b := s.infoBuf[:threadIdentifierInfoCount*4]
	if s.task.info(th.port, threadIdentifierInfo, b) != nil {
		return false
	}
	id, err := decodeThreadID(b)
	if err != nil {
		return false
	}
	th.tid = int(id)
	th.name, _ = s.threadName(th.port)
	if main {
		th.tid = s.pid
	}
	if th.name == "" {
		// Unnamed threads go by the process's name, as on Linux, where
		// a thread inherits its creator's.
		th.name = s.procName
	}
	if initial {
		if bi, ok := s.basic(th.port); ok {
			th.lastCPU = bi.CPU
		}
	}
	return true
}

func (s *machSampler) threadName(port uint32) (string, bool) {
	b := s.infoBuf[:threadExtendedInfoCount*4]
	if s.task.info(port, threadExtendedInfo, b) != nil {
		return "", false
	}
	name, err := decodeThreadName(b)
	return name, err == nil
}

func (s *machSampler) basic(port uint32) (threadBasic, bool) {
	b := s.infoBuf[:threadBasicInfoCount*4]
	if s.task.info(port, threadBasicInfo, b) != nil {
		return threadBasic{}, false
	}
	bi, err := decodeThreadBasicInfo(b)
	return bi, err == nil
}

// sampleThread samples th if it is running, or ran at least minRun since
// its last sample: a thread asleep at every tick still shows its bursts.
func (s *machSampler) sampleThread(th *machThread) {
	bi, ok := s.basic(th.port)
	if !ok {
		return // exiting; the next tick reports it
	}
	delta := bi.CPU - th.lastCPU
	if delta < 0 {
		delta = 0
	}
	if !bi.Running && delta < max(s.minRun, 1) {
		return
	}
	regs, stack, err := s.capture(th.port)
	if err != nil {
		return // keeps the CPU time for the next sample
	}
	th.lastCPU = bi.CPU
	s.frames = suspendwalk.WalkFP(s.arch, regs, stack, regs.SP, s.frames[:0], s.maxFrames)
	s.samples++
	s.sample = event.Sample{
		Time: s.now(), Pid: s.pid, Tid: th.tid, CPU: -1,
		CPUDelta: delta, Stack: s.frames,
	}
	s.emit(&s.sample)
}

// capture suspends the thread, reads its registers and a copy of its
// stack, and resumes it: on every path out, a panic included. The window
// holds a few Mach calls and nothing else (no handler call, no lock but
// suspendwalk.Mu); only a GC pause of gprof itself can lengthen it.
func (s *machSampler) capture(port uint32) (regs event.Regs, stack []byte, err error) {
	suspendwalk.Mu.Lock()
	defer suspendwalk.Mu.Unlock()
	if err := s.task.suspend(port); err != nil {
		return event.Regs{}, nil, err
	}
	s.suspended = port
	defer func() {
		rerr := s.task.resume(port)
		s.suspended = 0
		if rerr != nil && err == nil {
			err = fmt.Errorf("thread_resume: %w", rerr)
		}
	}()
	flavor, _ := stateFlavor(s.arch)
	if err := s.task.state(port, flavor, s.stateBuf); err != nil {
		return event.Regs{}, nil, err
	}
	regs, err = decodeThreadState(s.arch, s.stateBuf)
	if err != nil {
		return event.Regs{}, nil, err
	}
	return regs, s.readStack(regs.SP), nil
}

// readStack copies the stack from sp up, as much of len(s.stack) as is
// readable. A read fails as a whole if any page of it is unmapped, so
// when the full read fails, a binary search over page boundaries finds
// the longest readable copy in a few more reads.
func (s *machSampler) readStack(sp uint64) []byte {
	full := uint64(len(s.stack))
	if full == 0 || s.task.read(sp, s.stack) == nil {
		return s.stack
	}
	first := (sp + suspendwalk.StackPage) &^ (suspendwalk.StackPage - 1) // first page boundary above sp
	if first >= sp+full {
		return nil
	}
	// Ends first + k*suspendwalk.StackPage for k in [0, hi) are candidates.
	hi := int((sp+full-first)/suspendwalk.StackPage) + 1
	if first+uint64(hi-1)*suspendwalk.StackPage >= sp+full {
		hi--
	}
	end := func(k int) uint64 { return first + uint64(k)*suspendwalk.StackPage }
	best, last := -1, -1
	lo := 0
	for lo < hi {
		k := (lo + hi) / 2
		last = k
		if s.task.read(sp, s.stack[:end(k)-sp]) == nil {
			best, lo = k, k+1
		} else {
			hi = k
		}
	}
	if best < 0 {
		return nil
	}
	n := end(best) - sp
	if last != best && s.task.read(sp, s.stack[:n]) != nil {
		return nil
	}
	return s.stack[:n]
}
