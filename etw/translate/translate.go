// Package translate turns decoded ETW kernel events into attach's neutral
// events: the translation of the live Windows backend (attach/etw), whose
// real-time session delivers them, kept apart from it so that a file of
// the same events can go through it too. It keeps the target processes
// and those they start, joins samples to their stacks (kernel and user
// parts, cached stack keys) and reports images, processes and threads.
package translate

import (
	"cmp"
	"slices"
	"strings"

	"github.com/gprof-dev/gprof/attach"
	etwevent "github.com/gprof-dev/gprof/etw"
)

// Options configure a Translator.
type Options struct {
	// Targets are the processes recorded, launched or attached; the
	// processes they start are recorded too.
	Targets []int
	// ToNS converts an event's raw timestamp (QPC ticks) to the events'
	// clock (MonotonicNow's for a live session).
	ToNS func(int64) int64
	// Interval is the sampling interval in ns: each SampledProfile is
	// that much CPU time of its thread (times its Count).
	Interval int64
	Kernel   bool // keep kernel frames
	// Path turns a kernel path into one the user's tools open; Identify
	// reads an image's identity (from the PE on disk). Either may be nil.
	Path     func(string) string
	Identify func(path string, size uint64, timeDateStamp uint32) *attach.Image
	// MaxWait is how many ticks a sample waits for the rest of its stack
	// before it is sent with what it has; 0 waits until the thread ends
	// or Flush.
	MaxWait int64
}

// Translator translates one session's or file's events. Not safe for
// concurrent use: a session's callback calls it from one thread.
type Translator struct {
	h        attach.Handler
	toNS     func(int64) int64
	interval int64
	kernel   bool
	ptr64    bool // the kernel's pointer size, for what a kernel address is
	path     func(string) string
	identify func(path string, size uint64, timeDateStamp uint32) *attach.Image
	maxWait  int64

	targets  map[uint32]bool // pids recorded, launched or attached, and their children
	exited   map[uint32]bool
	launched int // how many targets there were at the start, for Done
	tidPid   map[uint32]uint32
	// mainTid is each target's first thread. It is reported with the
	// pid as its tid, the way attach's events mark a main thread (and the
	// mach backend does too): Windows thread ids are never process ids,
	// and the two share one namespace, so this clashes with no thread.
	mainTid map[uint32]uint32
	// Buffers of different CPUs arrive out of time order, so the first
	// thread seen may not be the first started: until the choice has been
	// used in an event, a thread that started earlier takes over.
	mainStart map[uint32]int64
	mainUsed  map[uint32]bool
	kimages   []attach.Map // kernel images (pid 0), given to every target with kernel on
	queue     []*pending
	byThread  map[uint32][]*pending // each thread's samples not sent yet, oldest first
	defs      map[uint64][]keyDef
	events    int // every event seen, whoever's
	samples   int // samples sent
	lost      uint64
	now       int64 // the newest event time seen
}

type pending struct {
	ev     attach.Sample
	raw    int64
	tid    uint32 // the thread's own id (ev.Tid is the pid for a main thread)
	frags  []*fragment
	closed bool // the thread ended
	// unowned says no thread event had named the sample's thread yet:
	// buffers of different CPUs arrive out of time order, so a new
	// thread's first samples can come before its start event.
	unowned bool
}

type fragment struct {
	frames  []uint64
	key     uint64
	keyed   bool
	refTime int64
}

type keyDef struct {
	time   int64
	frames []uint64
}

// New returns a translator that sends what the events say to h.
func New(h attach.Handler, opts Options) *Translator {
	t := &Translator{
		h: h, toNS: opts.ToNS, interval: opts.Interval, kernel: opts.Kernel, ptr64: true,
		path: opts.Path, identify: opts.Identify, maxWait: opts.MaxWait,
		targets:   map[uint32]bool{},
		exited:    map[uint32]bool{},
		tidPid:    map[uint32]uint32{},
		mainTid:   map[uint32]uint32{},
		mainStart: map[uint32]int64{},
		mainUsed:  map[uint32]bool{},
		byThread:  map[uint32][]*pending{},
		defs:      map[uint64][]keyDef{},
	}
	for _, p := range opts.Targets {
		t.targets[uint32(p)] = true
	}
	t.launched = len(t.targets)
	return t
}

// Samples is how many samples the translator has sent.
func (t *Translator) Samples() int { return t.samples }

// Lost is how many lost-event reports the translator has seen.
func (t *Translator) Lost() uint64 { return t.lost }

// Done reports whether every target has exited.
func (t *Translator) Done() bool {
	if len(t.targets) == 0 {
		return false
	}
	for p := range t.targets {
		if !t.exited[p] {
			return false
		}
	}
	return true
}

func (t *Translator) isKernel(a uint64) bool {
	if t.ptr64 {
		return a >= 0xFFFF800000000000
	}
	return a >= 0x80000000
}

// Event translates one event. cpu is the processor that logged it.
func (t *Translator) Event(e *etwevent.Event, cpu int) {
	t.events++
	if e.Time > t.now {
		t.now = e.Time
	}
	switch etwevent.KindOf(e) {
	case etwevent.KindSample:
		s, ok := etwevent.DecodeSample(e.Payload, e.Ptr64)
		if !ok {
			return
		}
		pid, known := t.tidPid[s.TID]
		if known && !t.targets[pid] {
			return
		}
		count := int64(max(s.Count, 1))
		p := &pending{raw: e.Time, tid: s.TID, unowned: !known, ev: attach.Sample{
			Time: t.toNS(e.Time), Pid: int(pid), Tid: int(s.TID), CPU: cpu,
			CPUDelta: count * t.interval, Stack: []uint64{s.IP},
			InKernel: t.isKernel(s.IP),
		}}
		t.queue = append(t.queue, p)
		t.byThread[s.TID] = append(t.byThread[s.TID], p)
	case etwevent.KindStack:
		s, ok := etwevent.DecodeStack(e.Payload, e.Ptr64)
		if ok && len(s.Frames) > 0 {
			t.addFragment(s, &fragment{frames: s.Frames})
		}
	case etwevent.KindStackKeyKernel, etwevent.KindStackKeyUser:
		s, ok := etwevent.DecodeStackKeyRef(e.Payload, e.Ptr64)
		if ok {
			t.addFragment(s, &fragment{key: s.Key, keyed: true, refTime: e.Time})
		}
	case etwevent.KindStackKeyDef:
		key, fr, ok := etwevent.DecodeStackKeyDef(e.Payload, e.Ptr64)
		if !ok {
			return
		}
		t.defs[key] = append(t.defs[key], keyDef{e.Time, fr})
	case etwevent.KindProcessStart, etwevent.KindProcessRundown:
		p, ok := etwevent.DecodeProcess(e.Payload, e.Ptr64, e.Version)
		if !ok {
			return
		}
		start := etwevent.KindOf(e) == etwevent.KindProcessStart
		if start && t.targets[p.ParentPID] && !t.targets[p.PID] {
			// A child of a target: recorded too, as on Linux.
			t.targets[p.PID] = true
			t.h(&attach.Fork{Time: t.toNS(e.Time), Pid: int(p.PID), Tid: int(p.PID), Ppid: int(p.ParentPID), Ptid: int(p.ParentPID)})
		}
		if t.targets[p.PID] && (start || e.Opcode == 3) {
			t.h(&attach.Comm{Time: t.toNS(e.Time), Pid: int(p.PID), Tid: int(p.PID), Name: p.ImageName, Exec: start, Argv: splitCommandLine(p.CommandLine)})
			if t.kernel && start {
				for _, m := range t.kimages {
					m.Pid, m.Time = int(p.PID), t.toNS(e.Time)
					t.h(&m)
				}
			}
		}
	case etwevent.KindProcessEnd:
		p, ok := etwevent.DecodeProcess(e.Payload, e.Ptr64, e.Version)
		if ok && t.targets[p.PID] && !t.exited[p.PID] {
			t.exited[p.PID] = true
			t.h(&attach.Exit{Time: t.toNS(e.Time), Pid: int(p.PID), Tid: int(p.PID)})
		}
	case etwevent.KindThreadStart, etwevent.KindThreadRundown:
		th, ok := etwevent.DecodeThread(e.Payload, e.Ptr64, e.Version)
		if !ok || e.Opcode == 4 {
			// DCEnd (the rundown at the session's end) names threads
			// already known.
			if ok {
				t.tidPid[th.TID] = th.PID
			}
			return
		}
		t.tidPid[th.TID] = th.PID
		if !t.targets[th.PID] {
			return
		}
		if m, ok := t.mainTid[th.PID]; !ok || m != th.TID && !t.mainUsed[th.PID] && e.Time < t.mainStart[th.PID] && etwevent.KindOf(e) == etwevent.KindThreadStart {
			t.mainTid[th.PID], t.mainStart[th.PID] = th.TID, e.Time
		} else if etwevent.KindOf(e) == etwevent.KindThreadStart {
			t.h(&attach.Fork{Time: t.toNS(e.Time), Pid: int(th.PID), Tid: int(th.TID), Ppid: int(th.PID), Ptid: int(th.PID)})
		}
		if th.Name != "" {
			t.h(&attach.Comm{Time: t.toNS(e.Time), Pid: int(th.PID), Tid: t.outTid(th.PID, th.TID), Name: th.Name})
		}
	case etwevent.KindThreadName:
		th, name, ok := etwevent.DecodeThreadName(e.Payload)
		if ok && t.targets[th.PID] {
			t.h(&attach.Comm{Time: t.toNS(e.Time), Pid: int(th.PID), Tid: t.outTid(th.PID, th.TID), Name: name})
		}
	case etwevent.KindThreadEnd:
		th, ok := etwevent.DecodeThread(e.Payload, e.Ptr64, e.Version)
		if !ok {
			return
		}
		for _, p := range t.byThread[th.TID] {
			p.closed = true
		}
		// The main thread's end is not the process's: Exit with the
		// pid as tid is, so it waits for Process End.
		if t.targets[th.PID] && t.outTid(th.PID, th.TID) != int(th.PID) {
			t.h(&attach.Exit{Time: t.toNS(e.Time), Pid: int(th.PID), Tid: int(th.TID)})
		}
	case etwevent.KindImageLoad, etwevent.KindImageRundown:
		im, ok := etwevent.DecodeImage(e.Payload, e.Ptr64)
		if !ok || e.Opcode == 4 { // DCEnd: loaded at the start, already seen
			return
		}
		m := t.imageMap(&im, e.Time)
		if im.PID == 0 {
			t.kimages = append(t.kimages, m)
			if t.kernel {
				for p := range t.targets {
					if !t.exited[p] {
						m.Pid = int(p)
						t.h(&m)
					}
				}
			}
			return
		}
		if t.targets[im.PID] {
			t.h(&m)
		}
	case etwevent.KindLost:
		t.lost++
		t.h(&attach.Lost{Time: t.toNS(e.Time), Count: 1})
	}
	t.emit(false)
}

// addFragment attaches part of a stack to its sample: the one of thread
// s.TID logged at s.SampleTime. A sample taken in kernel mode gets its
// kernel part at once and its user part when the thread returns to user
// mode, in a later event; if the thread was sampled several times in the
// kernel meanwhile, that one user part is the user stack of all of them,
// so a user part also completes the thread's earlier samples still waiting
// for theirs (samply's samples_with_pending_stacks).
func (t *Translator) addFragment(s etwevent.Stack, f *fragment) bool {
	q := t.byThread[s.TID]
	user := !f.keyed && len(f.frames) > 0 && !t.isKernel(f.frames[0])
	found := false
	for i := len(q) - 1; i >= 0; i-- {
		p := q[i]
		if p.raw == s.SampleTime {
			p.frags = append(p.frags, f)
			found = true
			continue
		}
		if user && p.raw < s.SampleTime && t.waitsForUser(p) {
			p.frags = append(p.frags, f)
		}
	}
	return found
}

// waitsForUser reports whether p has a kernel part and no user part yet.
func (t *Translator) waitsForUser(p *pending) bool {
	kern, user, keys := t.parts(p)
	return !keys && user == nil && kern != nil && t.isKernel(kern[len(kern)-1])
}

// complete reports whether p's stack can get no more parts.
func (t *Translator) complete(p *pending, final bool) bool {
	if final {
		return true
	}
	aged := t.maxWait > 0 && t.now-p.raw > t.maxWait
	if p.unowned {
		if pid, ok := t.tidPid[p.tid]; ok {
			p.unowned, p.ev.Pid = false, int(pid)
		} else {
			return aged
		}
	}
	if pid := uint32(p.ev.Pid); !t.mainUsed[pid] && t.maxWait > 0 && t.now-t.mainStart[pid] <= t.maxWait {
		return false // which thread is the main one may still change
	}
	kern, user, pendingKeys := t.parts(p)
	switch {
	case pendingKeys:
		// Cached stacks (not asked for live, found in files): the
		// definitions come at the end, out of time order.
		return aged
	case user != nil:
		return true
	case kern != nil && !t.isKernel(kern[len(kern)-1]):
		return true // the whole stack in one event
	}
	return p.closed || aged
}

// parts picks the kernel and user parts of p's stack as the ETL reader does:
// the first fragment that starts in the kernel, and the first that starts
// in user space.
func (t *Translator) parts(p *pending) (kern, user []uint64, pendingKeys bool) {
	for _, f := range p.frags {
		if f.keyed {
			pendingKeys = true
			continue
		}
		if len(f.frames) == 0 {
			continue
		}
		if t.isKernel(f.frames[0]) {
			if kern == nil {
				kern = f.frames
			}
		} else if user == nil {
			user = f.frames
		}
	}
	return kern, user, pendingKeys
}

// emit sends the samples at the head of the queue whose stacks are
// complete, keeping samples in the order they were logged.
func (t *Translator) emit(final bool) {
	n := 0
	for n < len(t.queue) && t.complete(t.queue[n], final) {
		p := t.queue[n]
		t.bindKeys(p)
		if p.unowned {
			if pid, ok := t.tidPid[p.tid]; ok {
				p.unowned, p.ev.Pid = false, int(pid)
			}
		}
		if !p.unowned && t.targets[uint32(p.ev.Pid)] {
			t.send(p)
		}
		tid := p.tid
		if q := t.byThread[tid]; len(q) > 0 && q[0] == p {
			if len(q) == 1 {
				delete(t.byThread, tid)
			} else {
				t.byThread[tid] = q[1:]
			}
		}
		t.queue[n] = nil
		n++
	}
	if n > 0 {
		t.queue = append(t.queue[:0], t.queue[n:]...)
	}
}

// bindKeys binds p's cached stack references to their definitions, as
// the ETL reader does: to the first definition of the key at or after the
// reference (keys are reused), else the last one.
func (t *Translator) bindKeys(p *pending) {
	for _, f := range p.frags {
		if !f.keyed {
			continue
		}
		ds := t.defs[f.key]
		if len(ds) == 0 {
			continue
		}
		if !slices.IsSortedFunc(ds, cmpKeyDef) {
			slices.SortStableFunc(ds, cmpKeyDef)
		}
		i, _ := slices.BinarySearchFunc(ds, f.refTime, func(d keyDef, t int64) int { return cmp.Compare(d.time, t) })
		if i == len(ds) {
			i--
		}
		f.frames, f.keyed = ds[i].frames, false
	}
}

func cmpKeyDef(x, y keyDef) int { return cmp.Compare(x.time, y.time) }

// outTid is the tid events report for thread tid of process pid.
func (t *Translator) outTid(pid, tid uint32) int {
	t.mainUsed[pid] = true
	if m, ok := t.mainTid[pid]; ok && m == tid {
		return int(pid)
	}
	return int(tid)
}

func (t *Translator) send(p *pending) {
	p.ev.Tid = t.outTid(uint32(p.ev.Pid), p.tid)
	kern, user, _ := t.parts(p)
	if n := len(kern); n > 0 && !t.isKernel(kern[n-1]) {
		user = nil // a whole stack in one event
	}
	s := &p.ev
	if kern == nil && user == nil {
		t.h(s)
		t.samples++
		return
	}
	stack := make([]uint64, 0, len(kern)+len(user))
	nk := 0
	for _, a := range kern {
		if t.isKernel(a) {
			nk++
		}
	}
	if len(kern) > 0 {
		s.InKernel = true
	}
	if t.kernel {
		stack = append(stack, kern[:nk]...)
		s.KernelFrames = nk
	}
	stack = append(stack, kern[nk:]...)
	stack = append(stack, user...)
	if len(stack) == 0 {
		// In the kernel, kernel frames not wanted, and no user part
		// came: the interrupted thread's user IP is unknown.
		stack = nil
	}
	s.Stack = stack
	t.h(s)
	t.samples++
}

// Flush sends every sample still waiting for its stack.
func (t *Translator) Flush() { t.emit(true) }

func (t *Translator) imageMap(im *etwevent.Image, raw int64) attach.Map {
	path := etwevent.NormalizePath(im.FileName)
	if t.path != nil {
		path = t.path(im.FileName)
	}
	m := attach.Map{Time: t.toNS(raw), Pid: int(im.PID), Start: im.Base, End: im.Base + im.Size, Path: path}
	if t.identify != nil {
		if id := t.identify(path, im.Size, im.TimeDateStamp); id != nil {
			// A PE's relative addresses are RVAs: from where it loaded.
			id.Base = im.Base
			m.Image = id
		}
	}
	return m
}

// splitCommandLine splits a Windows command line the way the C runtime
// does for the common cases: spaces separate arguments, double quotes group
// them. It is for display, not for running the command again.
func splitCommandLine(s string) []string {
	var out []string
	var cur strings.Builder
	in, have := false, false
	for _, r := range s {
		switch {
		case r == '"':
			in, have = !in, true
		case (r == ' ' || r == '\t') && !in:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}
