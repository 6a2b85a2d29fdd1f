package python

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Memory reads a process's memory (attach.Memory).
type Memory interface {
	// Read reads len(p) bytes at addr: all of them, or an error.
	Read(addr uint64, p []byte) error
	// ReadV reads bufs[i] at addrs[i] in one go and returns how many of
	// them, from the first, it read whole.
	ReadV(addrs []uint64, bufs [][]byte) int
}

// Copy is a Memory that holds a copy of a thread's state and frames made
// at its sample (see attach.InterpWalk): it says where the thread state
// it copied is.
type Copy interface {
	Memory
	ThreadState() uint64
}

// Range is [Start, End) of a process's address space.
type Range struct{ Start, End uint64 }

// Code is a Python function's code object, as a stack shows it.
type Code struct {
	Name      string // co_qualname where the version has it, else co_name
	File      string // co_filename
	FirstLine int32
	// where its instructions are in the process (3.11+): an instruction
	// pointer within says the code ran.
	instr Range
	table []byte // line table
	lines map[int64]int32
	id    codeID
}

// codeID is what tells a code object from another made later at the same
// address: the addresses of its name, file and line table.
type codeID struct{ name, file, table uint64 }

// Frame is one Python frame of a stack.
type Frame struct {
	Code *Code
	Line int32 // the line it runs, or its first line when unknown
	// Addr is where the frame itself is in the process (a PyFrameObject
	// or a _PyInterpreterFrame).
	Addr uint64
}

// Stack is what a thread's interpreter was running: Frames innermost
// first, of which the first Groups[0] ran in the innermost call of the
// eval function, the next Groups[1] in the call below it, and so on.
type Stack struct {
	Frames  []Frame
	Groups  []int
	Version string // "3.12"
	// Eval is where the interpreter's eval function lies: a native frame
	// there is one of the calls Groups counts.
	Eval []Range
	lay  *layout
}

// Reader reads the Python stacks of threads; safe for concurrent use.
type Reader struct {
	mu    sync.Mutex
	procs map[int]*process
	bins  map[string]*pyBinary // by path and identity
	// now is the clock, replaced by tests.
	now func() time.Time
}

// NewReader returns a Reader with nothing cached.
func NewReader() *Reader {
	return &Reader{procs: map[int]*process{}, bins: map[string]*pyBinary{}, now: time.Now}
}

// process is what a Reader knows of one process.
type process struct {
	mu sync.Mutex
	// interp is nil while the process runs no interpreter gprof knows;
	// checked is when that was last looked at.
	interp  *interpreter
	checked time.Time
	backoff time.Duration
	exe     string    // /proc/PID/exe when last looked at
	exeRead time.Time // when that was
	codes   map[uint64]*Code
	tstates map[int]uint64  // tid -> PyThreadState
	last    map[int]*walked // tid -> its previous walk
	misses  map[int]time.Time
	// tidOff is where glibc's struct pthread keeps the kernel's thread
	// id, for versions whose thread state has only pthread_self (< 3.11).
	tidOff int64
	// mainInterp is the first interpreter's state, as findThread last
	// found it (for Walk).
	mainInterp uint64
	pid        int
}

// interpreter is a CPython found in a process's address space.
type interpreter struct {
	lay      *layout
	version  string
	runtime  uint64 // &_PyRuntime
	codeType uint64 // &PyCode_Type
	eval     []Range
}

// ErrNotPython says a thread runs no Python the reader can read.
var errNotPython = errors.New("not a python thread")

// A process that runs no known interpreter is looked at again after
// rescanEvery, then twice as long each time up to rescanMax, and at
// once when it execs.
const (
	rescanEvery = 20 * time.Millisecond
	rescanMax   = time.Second
)

// exeEvery is how often Find reads a process's /proc/PID/exe at most, to
// notice an exec. The perf backend calls Find at every sample of a process
// that runs no known interpreter, and the read took 15 µs on average
// (up to 290) while the process ran: a 64 ms C program's samples cost
// gprof 1-1.6 ms of CPU that way, on the program's CPU as often as not. A
// freshly exec'd interpreter runs no Python code for longer than this.
const exeEvery = 5 * time.Millisecond

// missAgain is how long a thread with no Python thread state is left
// before the interpreter's thread list is searched for it again.
const missAgain = 100 * time.Millisecond

// maxFrames bounds a walk: a longer chain is taken for a loop.
const maxFrames = 4096

// Forget drops what the reader knows of pid (it exited or exec'd).
func (r *Reader) Forget(pid int) {
	r.mu.Lock()
	delete(r.procs, pid)
	r.mu.Unlock()
}

// Find looks for a Python interpreter in process pid, unless one is
// known already or was looked for lately, and reports whether one is
// known. It is the slow part of reading a process's Python stacks (the
// first time, it parses the interpreter's binary: tens of milliseconds
// for a libpython with its symbol table), so it is for callers that can
// wait without keeping the process from running; Read only reads.
//
// A process that runs no interpreter is looked at again after
// rescanEvery, then less and less often, and at once when it execs.
func (r *Reader) Find(pid int, mem Memory) bool {
	p := r.process(pid)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.interp != nil {
		return true
	}
	now := r.now()
	if !p.checked.IsZero() && now.Sub(p.exeRead) < exeEvery {
		return false
	}
	p.exeRead = now
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if exe == p.exe && !p.checked.IsZero() && now.Sub(p.checked) < p.backoff {
		return false
	}
	if exe != p.exe {
		p.backoff = rescanEvery
	} else {
		p.backoff = min(2*p.backoff, rescanMax)
	}
	p.exe, p.checked = exe, now
	p.interp = r.find(pid, mem)
	return p.interp != nil
}

// process returns what the reader knows of pid, new if nothing.
func (r *Reader) process(pid int) *process {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.procs[pid]
	if p == nil {
		p = &process{pid: pid, codes: map[uint64]*Code{}, tstates: map[int]uint64{}, last: map[int]*walked{}, misses: map[int]time.Time{}}
		r.procs[pid] = p
	}
	return p
}

// Read returns the Python stack thread tid of process pid is running, or
// nil when it runs none, cannot be read, or no interpreter was found in
// the process (Find). mem reads the process's memory; Read must be called
// while the thread is where its sample saw it, for the stack to be that
// sample's.
func (r *Reader) Read(pid, tid int, mem Memory) *Stack {
	p := r.process(pid)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.interp == nil {
		return nil
	}
	st, err := p.read(tid, mem, r.now())
	if err != nil {
		if !errors.Is(err, errNotPython) {
			// The interpreter may have gone with an exec: Find looks
			// again.
			p.interp = nil
			p.checked, p.backoff = r.now(), rescanEvery
			clear(p.codes)
			clear(p.tstates)
			clear(p.last)
		}
		return nil
	}
	return st
}

func u64(b []byte, off int64) uint64 { return binary.LittleEndian.Uint64(b[off:]) }

func (p *process) ptr(mem Memory, addr uint64) (uint64, error) {
	var b [8]byte
	if err := mem.Read(addr, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// read walks tid's frames.
func (p *process) read(tid int, mem Memory, now time.Time) (*Stack, error) {
	in := p.interp
	l := in.lay
	tsb := make([]byte, l.tstateSpan())
	ts, ok := p.tstates[tid]
	if c, isCopy := mem.(Copy); isCopy {
		// Where the thread's state is, as a copy made at the sample
		// found it: no search, and no waiting out an earlier miss.
		if at := c.ThreadState(); at != 0 && at != ts {
			if mem.Read(at, tsb) == nil && p.isThread(l, tsb, tid, mem) {
				ts, ok = at, true
				p.tstates[tid] = at
				delete(p.misses, tid)
			}
		}
	}
	// What the thread's previous walk read, read again in one system
	// call with its state: a thread that runs the same functions (most
	// samples of most programs) costs one. What differs is read anew.
	pre := p.batch(tid, ts, tsb, mem)
	if ok {
		if !pre.tsOK && mem.Read(ts, tsb) != nil || !p.isThread(l, tsb, tid, mem) {
			delete(p.tstates, tid)
			ok = false
			pre = prefetch{}
		}
	}
	if !ok {
		if t, missed := p.misses[tid]; missed && now.Sub(t) < missAgain {
			return nil, errNotPython
		}
		var err error
		ts, err = p.findThread(tid, mem, tsb)
		if err != nil {
			return nil, err
		}
		if ts == 0 {
			if p.mainInterp != 0 {
				p.misses[tid] = now
			}
			// With no interpreter yet (the runtime is starting) the
			// search cost one read, and the first Python code runs any
			// moment: look again at the next sample, not missAgain
			// later.
			return nil, errNotPython
		}
		delete(p.misses, tid)
		p.tstates[tid] = ts
	}
	var frame uint64
	walk := &walked{}
	if l.tsCFrame >= 0 {
		cf := u64(tsb, l.tsCFrame)
		if cf == 0 {
			return nil, errNotPython
		}
		walk.cf = cf
		if pre.cfOK && pre.cf == cf {
			frame = u64(pre.cfb[:], 0)
		} else {
			var err error
			if frame, err = p.ptr(mem, cf+uint64(l.cfCurrent)); err != nil {
				return nil, errNotPython
			}
		}
	} else {
		frame = u64(tsb, l.tsFrame)
	}
	st := &Stack{Version: in.version, Eval: in.eval, lay: l}
	group := 0
	for n := 0; frame != 0; n++ {
		if n == maxFrames {
			return nil, errNotPython
		}
		var fb []byte
		if n < len(pre.frames) && pre.frames[n].addr == frame && pre.frames[n].ok {
			fb = pre.frames[n].buf
		} else {
			fb = make([]byte, l.frameSpan())
			if err := mem.Read(frame, fb); err != nil {
				return nil, errNotPython
			}
		}
		walk.frames = append(walk.frames, frame)
		walk.codes = append(walk.codes, 0)
		next := u64(fb, l.frBack)
		if l.frOwner >= 0 && fb[l.frOwner] == frameOwnedByCStack {
			// 3.12+: the frame under those of one eval call.
			st.Groups = append(st.Groups, group)
			group = 0
			frame = next
			continue
		}
		codeAddr := u64(fb, l.frCode)
		walk.codes[n] = codeAddr
		var hdr []byte
		if n < len(pre.codes) && pre.codes[n].addr == codeAddr && pre.codes[n].ok {
			hdr = pre.codes[n].buf
		}
		c, err := p.code(codeAddr, hdr, mem)
		if err != nil {
			return nil, errNotPython
		}
		f := Frame{Code: c, Addr: frame, Line: c.FirstLine}
		switch {
		case l.frLasti >= 0:
			lasti := int64(int32(binary.LittleEndian.Uint32(fb[l.frLasti:])))
			if l.minor >= 10 {
				lasti *= 2 // 3.10 counts code units
			}
			f.Line = c.line(l, lasti)
		case l.frInstr >= 0:
			ip := u64(fb, l.frInstr)
			if ip >= c.instr.Start {
				f.Line = c.line(l, int64(ip-c.instr.Start)/2)
			}
		}
		st.Frames = append(st.Frames, f)
		group++
		switch {
		case l.minor < 11:
			// One eval call per frame.
			st.Groups = append(st.Groups, group)
			group = 0
		case l.frIsEntry >= 0 && fb[l.frIsEntry] != 0:
			// 3.11: the first frame an eval call ran.
			st.Groups = append(st.Groups, group)
			group = 0
		}
		frame = next
	}
	if group > 0 {
		// Frames not yet entered by an eval call of their own (a frame
		// pushed before its call began): the walk is out of step.
		st.Groups = append(st.Groups, group)
	}
	p.last[tid] = walk
	return st, nil
}

// walked is what a thread's walk read: where its frames and their code
// objects were, for the next walk to read again at once.
type walked struct {
	cf            uint64 // _PyCFrame (3.11, 3.12)
	frames, codes []uint64
}

// prefetch is what batch read ahead.
type prefetch struct {
	tsOK   bool
	cf     uint64
	cfOK   bool
	cfb    [8]byte
	frames []span
	codes  []span
}

type span struct {
	addr uint64
	buf  []byte
	ok   bool
}

// maxBatch is how many ranges one batch reads (process_vm_readv takes
// up to 1024; a few frames cover most stacks' changing part).
const maxBatch = 16

// batch reads, in one system call, tid's thread state at ts (into tsb)
// and what its previous walk read: the _PyCFrame's current frame, the
// frames and their code objects' headers, innermost first, as many as
// fit.
func (p *process) batch(tid int, ts uint64, tsb []byte, mem Memory) prefetch {
	var pre prefetch
	last := p.last[tid]
	if ts == 0 || last == nil {
		return pre
	}
	l := p.interp.lay
	addrs := []uint64{ts}
	bufs := [][]byte{tsb}
	if l.tsCFrame >= 0 && last.cf != 0 {
		pre.cf = last.cf
		addrs = append(addrs, last.cf+uint64(l.cfCurrent))
		bufs = append(bufs, pre.cfb[:])
	}
	n := min(len(last.frames), (maxBatch-len(addrs))/2)
	for i := 0; i < n; i++ {
		pre.frames = append(pre.frames, span{addr: last.frames[i], buf: make([]byte, l.frameSpan())})
		addrs = append(addrs, last.frames[i])
		bufs = append(bufs, pre.frames[i].buf)
	}
	for i := 0; i < n; i++ {
		if last.codes[i] == 0 {
			pre.codes = append(pre.codes, span{})
			continue
		}
		pre.codes = append(pre.codes, span{addr: last.codes[i], buf: make([]byte, l.codeSpan())})
		addrs = append(addrs, last.codes[i])
		bufs = append(bufs, pre.codes[i].buf)
	}
	done := mem.ReadV(addrs, bufs)
	// Mark what was read whole: the ranges are in the order above.
	k := 0
	ok := func() bool { k++; return k <= done }
	pre.tsOK = ok()
	if pre.cf != 0 {
		pre.cfOK = ok()
	}
	for i := range pre.frames {
		pre.frames[i].ok = ok()
	}
	for i := range pre.codes {
		if pre.codes[i].addr != 0 {
			pre.codes[i].ok = ok()
		}
	}
	return pre
}

// isThread reports whether the thread state read into tsb is tid's.
func (p *process) isThread(l *layout, tsb []byte, tid int, mem Memory) bool {
	if l.tsNativeID >= 0 {
		return int64(u64(tsb, l.tsNativeID)) == int64(tid)
	}
	pt := u64(tsb, l.tsThreadID)
	if pt == 0 {
		return false
	}
	if p.tidOff == 0 {
		// Calibrated on the main thread, whose tid is the pid, or on
		// the thread sought should glibc's place hold its tid.
		p.tidOff = findTidOffset(pt, tid, p.pid, mem)
		if p.tidOff == 0 {
			return false
		}
	}
	var b [4]byte
	if mem.Read(pt+uint64(p.tidOff), b[:]) != nil {
		return false
	}
	return int32(binary.LittleEndian.Uint32(b[:])) == int32(tid)
}

// glibcTidOffset is where x86-64 glibc's struct pthread holds tid.
const glibcTidOffset = 0x2d0

// findTidOffset finds where the struct pthread at pt holds its thread's
// id: glibc's usual place when it holds tid or the pid there, else the
// first place within the structure's first 2 KiB that holds the pid (the
// main thread's id; ids are distinctive enough numbers), else 0.
func findTidOffset(pt uint64, tid, pid int, mem Memory) int64 {
	var b [2048]byte
	if mem.Read(pt, b[:]) != nil {
		return 0
	}
	if v := int32(binary.LittleEndian.Uint32(b[glibcTidOffset:])); v == int32(tid) || v == int32(pid) {
		return glibcTidOffset
	}
	for off := 16; off+4 <= len(b); off += 4 {
		if int32(binary.LittleEndian.Uint32(b[off:])) == int32(pid) {
			return int64(off)
		}
	}
	return 0
}

// findThread searches the interpreters' thread lists for tid's state.
func (p *process) findThread(tid int, mem Memory, tsb []byte) (uint64, error) {
	in := p.interp
	l := in.lay
	interp, err := p.ptr(mem, in.runtime+uint64(l.interpHead))
	if err != nil {
		return 0, err
	}
	p.mainInterp = interp
	for ni := 0; interp != 0 && ni < 64; ni++ {
		ts, err := p.ptr(mem, interp+uint64(l.threadsHead))
		if err != nil {
			return 0, err
		}
		for n := 0; ts != 0 && n < 4096; n++ {
			if err := mem.Read(ts, tsb); err != nil {
				return 0, err
			}
			if p.isThread(l, tsb, tid, mem) {
				return ts, nil
			}
			ts = u64(tsb, l.tsNext)
		}
		if interp, err = p.ptr(mem, interp+uint64(l.interpNext)); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

// code returns the code object at addr, from the cache or read now.
func (p *process) code(addr uint64, hdr []byte, mem Memory) (*Code, error) {
	in := p.interp
	l := in.lay
	b := hdr
	if b == nil {
		b = make([]byte, l.codeSpan())
		if addr == 0 || mem.Read(addr, b) != nil {
			return nil, errNotPython
		}
	}
	if u64(b, 8) != in.codeType {
		return nil, errors.New("not a code object")
	}
	// The header is read every time: a code object freed (a module's
	// once it ran) and another made at its address must not keep the
	// old one's name. Its name, file and line table objects say which.
	id := codeID{u64(b, l.coName), u64(b, l.coFilename), u64(b, l.coLineTable)}
	if l.coQualname >= 0 {
		id.name = u64(b, l.coQualname)
	}
	if c := p.codes[addr]; c != nil && c.id == id {
		return c, nil
	}
	c := &Code{FirstLine: int32(binary.LittleEndian.Uint32(b[l.coFirstLine:])), id: id}
	var err error
	nameAt := l.coName
	if l.coQualname >= 0 {
		nameAt = l.coQualname
	}
	if c.Name, err = readString(l, mem, u64(b, nameAt)); err != nil {
		return nil, err
	}
	if c.File, err = readString(l, mem, u64(b, l.coFilename)); err != nil {
		return nil, err
	}
	c.table, _ = readBytes(mem, u64(b, l.coLineTable), 1<<20)
	if l.coCodeAdaptive >= 0 {
		// The instructions are inline, after the header; ob_size counts
		// them in code units.
		c.instr = Range{addr + uint64(l.coCodeAdaptive), addr + uint64(l.coCodeAdaptive) + 2*u64(b, 16)}
	}
	if len(p.codes) > 1<<16 {
		clear(p.codes)
	}
	p.codes[addr] = c
	return c, nil
}

// line is the source line of the instruction at off (a byte offset
// before 3.11, a code unit index after).
func (c *Code) line(l *layout, off int64) int32 {
	if ln, ok := c.lines[off]; ok {
		return ln
	}
	var ln int32
	switch {
	case l.minor < 10:
		ln = lineLnotab(c.table, c.FirstLine, off)
	case l.minor == 10:
		ln = lineTable310(c.table, c.FirstLine, off)
	default:
		ln = lineLocations(c.table, c.FirstLine, off)
	}
	if ln <= 0 {
		ln = c.FirstLine
	}
	if c.lines == nil {
		c.lines = map[int64]int32{}
	}
	if len(c.lines) < 4096 {
		c.lines[off] = ln
	}
	return ln
}

// readBytes reads a bytes object's contents, at most max bytes.
func readBytes(mem Memory, addr uint64, max int) ([]byte, error) {
	if addr == 0 {
		return nil, errNotPython
	}
	var h [32]byte
	if err := mem.Read(addr, h[:]); err != nil {
		return nil, err
	}
	n := int64(u64(h[:], 16))
	if n < 0 || n > int64(max) {
		return nil, errors.New("bytes object too large")
	}
	b := make([]byte, n)
	if n > 0 {
		if err := mem.Read(addr+32, b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// readString reads a str object: compact strings only, which is what
// code objects' names and file names are.
func readString(l *layout, mem Memory, addr uint64) (string, error) {
	if addr == 0 {
		return "", errNotPython
	}
	var h [40]byte
	if err := mem.Read(addr, h[:]); err != nil {
		return "", err
	}
	n := int64(u64(h[:], 16))
	state := binary.LittleEndian.Uint32(h[32:])
	kind := int64(state>>2) & 7
	compact, ascii := state>>5&1 != 0, state>>6&1 != 0
	if !compact || n < 0 || n > 4096 || (kind != 1 && kind != 2 && kind != 4) {
		return "", errors.New("not a compact string")
	}
	data := addr + uint64(l.compactSize)
	if ascii {
		data = addr + uint64(l.asciiSize)
	}
	b := make([]byte, n*kind)
	if err := mem.Read(data, b); err != nil {
		return "", err
	}
	switch kind {
	case 1:
		if ascii {
			return string(b), nil
		}
		r := make([]rune, n)
		for i := range r {
			r[i] = rune(b[i])
		}
		return string(r), nil
	case 2:
		r := make([]rune, n)
		for i := range r {
			r[i] = rune(binary.LittleEndian.Uint16(b[2*i:]))
		}
		return string(r), nil
	default:
		r := make([]rune, n)
		for i := range r {
			r[i] = rune(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return string(r), nil
	}
}

// Seen reports whether the innermost frame of s shows in what a sample
// copied of its thread (register values and the stack from the stack
// pointer up): for a stack read after the sample (perf), it says the
// thread was running that frame then. Before 3.11 an eval call holds its
// frame object's address; from 3.11 it holds a pointer into the code
// object's instructions (next_instr), unique to the function. A stack
// with no frames is seen.
func (s *Stack) Seen(regs []uint64, stack []byte) bool {
	if len(s.Frames) == 0 {
		return true
	}
	f := s.Frames[0]
	lo, hi := f.Addr, f.Addr+1
	if s.lay.minor >= 11 {
		lo, hi = f.Code.instr.Start, f.Code.instr.End
		if hi <= lo {
			return false
		}
	}
	for _, v := range regs {
		if v >= lo && v < hi {
			return true
		}
	}
	for i := 0; i+8 <= len(stack); i += 8 {
		if v := binary.LittleEndian.Uint64(stack[i:]); v >= lo && v < hi {
			return true
		}
	}
	return false
}
