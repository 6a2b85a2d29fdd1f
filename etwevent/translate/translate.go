// Package translate turns decoded ETW kernel events into the neutral
// events. It is the one translation of ETW events: the live Windows
// backend (attach/etw) feeds it what its real-time session delivers, and
// the ETL file replayer (record/etl) what it walks out of a file; nothing
// else imports it (house_test.go). It keeps the target processes and
// those they start, or every process of a file; joins samples to their
// stacks (kernel and user parts, cached stack keys); and reports images
// (identified by the caller), processes and threads, and their ends.
package translate

import (
	"cmp"
	"slices"
	"strings"

	"github.com/gprof-dev/gprof/etwevent"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/objfile"
)

// Options configure a Translator.
type Options struct {
	// Targets are the processes recorded, launched or attached; the
	// processes they start are recorded too. AllProcesses records every
	// process instead (a file's whole trace).
	Targets      []int
	AllProcesses bool
	// ToNS converts an event's raw timestamp (QPC ticks) to the events'
	// clock (event.Now's for a live session).
	ToNS func(int64) int64
	// Interval is the sampling interval in ns: each SampledProfile is
	// that much CPU time of its thread (times its Count).
	Interval int64
	Kernel   bool // keep kernel frames
	// Path turns a kernel path into one the user's tools open (the
	// default only names \SystemRoot); Identify gives the identity of the
	// image at path (DiskIdentity reads it from the PE on disk), or nil
	// to leave it to the recorder. Either may be nil.
	Path     func(string) string
	Identify func(im *etwevent.Image, path string) *objfile.Identity
	// MaxWait is how many ticks a sample waits for the rest of its stack
	// before it is sent with what it has; 0 waits until the thread ends
	// or Flush.
	MaxWait int64
	// Start, when not 0, is the raw time the trace began: the processes,
	// threads and images a rundown names that were not seen before are
	// reported as there since Start, as they were. 0 reports them at
	// their rundown's time.
	Start int64
	// KeepTids reports every thread by its own tid, the first one of a
	// process too, and names processes through their threads' Comm
	// events (Argv); the caller marks main threads. Without it a
	// process's first thread is reported with the pid as its tid, the
	// way attach's events mark a main thread.
	KeepTids bool
}

// Translator translates one session's or file's events. Not safe for
// concurrent use: a session's callback calls it from one thread.
type Translator struct {
	h        event.Handler
	toNS     func(int64) int64
	interval int64
	kernel   bool
	ptr64    bool // the kernel's pointer size, for what a kernel address is
	path     func(string) string
	identify func(im *etwevent.Image, path string) *objfile.Identity
	maxWait  int64
	start    int64
	keepTids bool

	all     bool            // every process is a target
	targets map[uint32]bool // pids recorded, launched or attached, and their children
	exited  map[uint32]bool
	// seen are the processes announced (by a process event) and their
	// argv, for the Comm events of their threads with KeepTids.
	seen   map[uint32]bool
	argv   map[uint32][]string
	first  map[uint32]*firstThread // each process's earliest thread, with KeepTids
	tidPid map[uint32]uint32
	// mapped are the images reported loaded, by process and base, so a
	// rundown at the end adds only those not seen; kernelSent is how many
	// of kimages each process was given.
	mapped     map[uint32]map[uint64]bool
	kernelSent map[uint32]int
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
	kimages   []event.Map // kernel images (pid 0), given to every target with kernel on
	queue     []*pending
	byThread  map[uint32][]*pending // each thread's samples not sent yet, oldest first
	defs      map[uint64][]keyDef
	// ends are the processes ended whose Exit is not sent yet: the
	// kernel logs Process End while the last thread still runs the
	// exit path, and samples of that (after it) are the process's, so
	// the Exit waits as a sample does for its stack, and is sent no
	// earlier than the process's last sample.
	ends    []*processEnd
	endOf   map[uint32]*processEnd
	events  int // every event seen, whoever's
	samples int // samples sent
	lost    uint64
	now     int64 // the newest event time seen
}

type pending struct {
	ev     event.Sample
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

type firstThread struct {
	etwevent.Thread
	raw int64 // when it was reported to start
}

type processEnd struct {
	pid  uint32
	raw  int64
	code int32
}

// New returns a translator that sends what the events say to h.
func New(h event.Handler, opts Options) *Translator {
	t := &Translator{
		h: h, toNS: opts.ToNS, interval: opts.Interval, kernel: opts.Kernel, ptr64: true,
		path: opts.Path, identify: opts.Identify, maxWait: opts.MaxWait,
		start: opts.Start, keepTids: opts.KeepTids, all: opts.AllProcesses,
		targets:    map[uint32]bool{},
		exited:     map[uint32]bool{},
		seen:       map[uint32]bool{},
		argv:       map[uint32][]string{},
		first:      map[uint32]*firstThread{},
		mapped:     map[uint32]map[uint64]bool{},
		endOf:      map[uint32]*processEnd{},
		kernelSent: map[uint32]int{},
		tidPid:     map[uint32]uint32{},
		mainTid:    map[uint32]uint32{},
		mainStart:  map[uint32]int64{},
		mainUsed:   map[uint32]bool{},
		byThread:   map[uint32][]*pending{},
		defs:       map[uint64][]keyDef{},
	}
	for _, p := range opts.Targets {
		t.targets[uint32(p)] = true
	}
	return t
}

// Samples is how many samples the translator has sent.
func (t *Translator) Samples() int { return t.samples }

// Lost is how many lost-event reports the translator has seen.
func (t *Translator) Lost() uint64 { return t.lost }

// Done reports whether every target has exited.
func (t *Translator) Done() bool {
	if t.all || len(t.targets) == 0 {
		return false
	}
	for p := range t.targets {
		if !t.exited[p] {
			return false
		}
	}
	return true
}

func (t *Translator) isKernel(a uint64) bool { return a >= t.kernelFrom() }

// kernelFrom is where the kernel's half of the address space starts.
func (t *Translator) kernelFrom() uint64 {
	if t.ptr64 {
		return 0xFFFF800000000000
	}
	return 0x80000000
}

// Event translates one event. cpu is the processor that logged it.
func (t *Translator) Event(e *etwevent.Event, cpu int) {
	t.events++
	if e.Time > t.now {
		t.now = e.Time
	}
	switch kind := etwevent.KindOf(e); kind {
	case etwevent.KindSample:
		s, ok := etwevent.DecodeSample(e.Payload, e.Ptr64)
		if !ok {
			return
		}
		pid, known := t.tidPid[s.TID]
		if known && !t.isTarget(pid) {
			return
		}
		count := int64(max(s.Count, 1))
		p := &pending{raw: e.Time, tid: s.TID, unowned: !known, ev: event.Sample{
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
		start := kind == etwevent.KindProcessStart
		if start {
			t.endNow(p.PID)
			t.newProcess(p.PID)
		}
		if start && !t.all && t.targets[p.ParentPID] && !t.targets[p.PID] {
			// A child of a target: recorded too, as on Linux.
			t.targets[p.PID] = true
			t.h(&event.Fork{Time: t.toNS(e.Time), Pid: int(p.PID), Tid: int(p.PID), Ppid: int(p.ParentPID), Ptid: int(p.ParentPID)})
		}
		// DCEnd (the rundown at the end) names a process not seen
		// before only in a circular trace, whose start was overwritten.
		if t.isTarget(p.PID) && (start || e.Opcode == 3 || !t.seen[p.PID]) {
			t.announce(&p, start, e.Time)
		}
	case etwevent.KindProcessEnd:
		p, ok := etwevent.DecodeProcess(e.Payload, e.Ptr64, e.Version)
		if ok && t.isTarget(p.PID) && !t.exited[p.PID] {
			t.exited[p.PID] = true
			x := &processEnd{pid: p.PID, raw: e.Time, code: p.ExitStatus}
			t.ends = append(t.ends, x)
			t.endOf[p.PID] = x
		}
	case etwevent.KindThreadStart, etwevent.KindThreadRundown:
		th, ok := etwevent.DecodeThread(e.Payload, e.Ptr64, e.Version)
		if !ok {
			return
		}
		known := t.owns(th)
		if e.Opcode == 4 && known {
			return // DCEnd, the rundown at the end, of a thread known
		}
		if !t.isTarget(th.PID) {
			return
		}
		raw := e.Time
		if kind == etwevent.KindThreadRundown && t.start != 0 {
			raw = t.start
		}
		if t.keepTids {
			if f, ok := t.first[th.PID]; !ok || raw < f.raw {
				t.first[th.PID] = &firstThread{th, raw}
			}
			t.h(&event.Comm{Time: t.toNS(raw), Pid: int(th.PID), Tid: int(th.TID), Name: th.Name, Argv: t.argv[th.PID]})
			return
		}
		if m, ok := t.mainTid[th.PID]; !ok || m != th.TID && !t.mainUsed[th.PID] && e.Time < t.mainStart[th.PID] && kind == etwevent.KindThreadStart {
			t.mainTid[th.PID], t.mainStart[th.PID] = th.TID, e.Time
		} else if kind == etwevent.KindThreadStart {
			t.h(&event.Fork{Time: t.toNS(raw), Pid: int(th.PID), Tid: int(th.TID), Ppid: int(th.PID), Ptid: int(th.PID)})
		}
		if th.Name != "" {
			t.h(&event.Comm{Time: t.toNS(raw), Pid: int(th.PID), Tid: t.outTid(th.PID, th.TID), Name: th.Name})
		}
	case etwevent.KindThreadName:
		th, name, ok := etwevent.DecodeThreadName(e.Payload)
		if f := t.first[th.PID]; ok && f != nil && f.TID == th.TID {
			f.Name = name
		}
		if ok && t.isTarget(th.PID) {
			t.h(&event.Comm{Time: t.toNS(e.Time), Pid: int(th.PID), Tid: t.outTid(th.PID, th.TID), Name: name})
		}
	case etwevent.KindThreadEnd:
		th, ok := etwevent.DecodeThread(e.Payload, e.Ptr64, e.Version)
		if !ok {
			return
		}
		t.owns(th)
		for _, p := range t.byThread[th.TID] {
			p.closed = true
		}
		// The main thread's end is not the process's: Exit with the
		// pid as tid is, so it waits for Process End.
		if t.isTarget(th.PID) && t.outTid(th.PID, th.TID) != int(th.PID) {
			t.h(&event.Exit{Time: t.toNS(e.Time), Pid: int(th.PID), Tid: int(th.TID)})
		}
	case etwevent.KindImageLoad, etwevent.KindImageRundown:
		im, ok := etwevent.DecodeImage(e.Payload, e.Ptr64)
		if !ok {
			return
		}
		if e.Opcode == 4 && t.mapped[im.PID][im.Base] {
			return // DCEnd, the rundown at the end, of an image known
		}
		raw := e.Time
		if kind == etwevent.KindImageRundown && t.start != 0 {
			raw = t.start
		}
		m := t.imageMap(&im, raw)
		if im.PID == 0 {
			t.markMapped(im.PID, im.Base)
			t.kimages = append(t.kimages, m)
			if t.kernel {
				for p := range t.targets {
					t.giveKernel(p, raw)
				}
				for p := range t.seen {
					t.giveKernel(p, raw)
				}
			}
			return
		}
		if t.isTarget(im.PID) {
			t.markMapped(im.PID, im.Base)
			t.h(&m)
		}
	case etwevent.KindImageUnload:
		im, ok := etwevent.DecodeImage(e.Payload, e.Ptr64)
		if ok && im.PID != 0 && t.mapped[im.PID][im.Base] && t.isTarget(im.PID) {
			delete(t.mapped[im.PID], im.Base)
			t.h(&event.Unmap{Time: t.toNS(e.Time), Pid: int(im.PID), Start: im.Base, End: im.Base + im.Size})
		}
	case etwevent.KindLost:
		t.lost++
		t.h(&event.Lost{Time: t.toNS(e.Time), Count: 1})
	}
	t.emit(false)
}

func (t *Translator) isTarget(pid uint32) bool { return t.all || t.targets[pid] }

// newProcess forgets what was known of an earlier process with pid: a
// process that starts has a pid no live process has.
func (t *Translator) newProcess(pid uint32) {
	if t.all {
		delete(t.exited, pid)
	}
	delete(t.seen, pid)
	delete(t.argv, pid)
	delete(t.first, pid)
	delete(t.kernelSent, pid)
	delete(t.mainTid, pid)
	delete(t.mainStart, pid)
	delete(t.mainUsed, pid)
	delete(t.mapped, pid)
}

// announce reports a process a process event names: its name and command
// line, and the kernel's images. On Windows the image's name is the
// process's; argv[0] is whatever the parent passed (%SystemRoot%\...,
// "dwm.exe", another case), so Argv starts with the image's name.
func (t *Translator) announce(p *etwevent.Process, start bool, raw int64) {
	if !start && t.start != 0 {
		raw = t.start
	}
	t.seen[p.PID] = true
	if p.PID == 0 && p.ImageName == "" {
		p.ImageName = "Idle"
	}
	var argv []string
	if p.ImageName != "" {
		args := splitCommandLine(p.CommandLine)
		if len(args) > 0 {
			args = args[1:]
		}
		argv = append([]string{p.ImageName}, args...)
	}
	t.argv[p.PID] = argv
	switch f := t.first[p.PID]; {
	case !t.keepTids:
		t.h(&event.Comm{Time: t.toNS(raw), Pid: int(p.PID), Tid: int(p.PID), Name: p.ImageName, Exec: start, Argv: argv})
	case f != nil:
		// The rundown at the end can name a process's threads before
		// the process: its earliest thread names it.
		t.h(&event.Comm{Time: t.toNS(f.raw), Pid: int(p.PID), Tid: int(f.TID), Name: f.Name, Argv: argv})
	}
	if t.kernel {
		t.giveKernel(p.PID, raw)
	}
}

// giveKernel reports the kernel's images pid has not been given yet, if
// it is a target still running.
func (t *Translator) giveKernel(pid uint32, raw int64) {
	if t.exited[pid] || !t.isTarget(pid) {
		return
	}
	for _, m := range t.kimages[t.kernelSent[pid]:] {
		m.Pid, m.Time = int(pid), t.toNS(raw)
		t.h(&m)
	}
	t.kernelSent[pid] = len(t.kimages)
}

// owns records that thread th belongs to its process, and reports whether
// that was known. The samples of the thread whose process was not known
// are that process's: a thread event after them is the first to name it
// (its start was lost, or came late from another CPU's buffer).
func (t *Translator) owns(th etwevent.Thread) bool {
	pid, ok := t.tidPid[th.TID]
	t.tidPid[th.TID] = th.PID
	for _, p := range t.byThread[th.TID] {
		if p.unowned {
			p.unowned, p.ev.Pid = false, int(th.PID)
		}
	}
	return ok && pid == th.PID
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

// parts picks the kernel and user parts of p's stack: the first fragment
// that starts in the kernel, and the first that starts in user space.
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
		if !p.unowned && t.isTarget(uint32(p.ev.Pid)) {
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
	for len(t.ends) > 0 && (final || t.maxWait > 0 && t.now-t.ends[0].raw > t.maxWait) {
		t.sendEnd(0)
	}
}

// endNow sends the Exit of an earlier process with pid, which a new
// process with that pid ends for sure.
func (t *Translator) endNow(pid uint32) {
	if x := t.endOf[pid]; x != nil {
		t.sendEnd(slices.Index(t.ends, x))
	}
}

func (t *Translator) sendEnd(i int) {
	x := t.ends[i]
	t.ends = slices.Delete(t.ends, i, i+1)
	delete(t.endOf, x.pid)
	t.h(&event.Exit{Time: t.toNS(x.raw), Pid: int(x.pid), Tid: int(x.pid), ExitCode: int(x.code), ExitKnown: true})
}

func (t *Translator) markMapped(pid uint32, base uint64) {
	if t.mapped[pid] == nil {
		t.mapped[pid] = map[uint64]bool{}
	}
	t.mapped[pid][base] = true
}

// bindKeys binds p's cached stack references to their definitions: to
// the first definition of the key at or after the reference (keys are
// reused), else the last one.
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
	if x := t.endOf[uint32(p.ev.Pid)]; x != nil && x.raw < p.raw {
		x.raw = p.raw
	}
	p.ev.Tid = t.outTid(uint32(p.ev.Pid), p.tid)
	kern, user, _ := t.parts(p)
	if n := len(kern); n > 0 && !t.isKernel(kern[n-1]) {
		user = nil // a whole stack in one event
	}
	s := &p.ev
	if kern == nil && s.InKernel {
		// Sampled in the kernel with no kernel part: the sampled
		// instruction is all of it.
		kern = s.Stack[:1]
	}
	if kern == nil && user == nil {
		t.h(s)
		t.samples++
		return
	}
	if len(kern) > 0 {
		s.InKernel = true
	}
	// The kernel's frames lead, and a stack that calls back from the
	// kernel into user mode (a window procedure) has more in its middle.
	stack := make([]uint64, 0, len(kern)+len(user))
	for _, part := range [][]uint64{kern, user} {
		for _, a := range part {
			if t.kernel || !t.isKernel(a) {
				stack = append(stack, a)
			}
		}
	}
	if t.kernel {
		for s.KernelFrames < len(stack) && t.isKernel(stack[s.KernelFrames]) {
			s.KernelFrames++
		}
		s.KernelFrom = t.kernelFrom()
	}
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

func (t *Translator) imageMap(im *etwevent.Image, raw int64) event.Map {
	path := etwevent.NormalizePath(im.FileName)
	if t.path != nil {
		path = t.path(im.FileName)
	}
	m := event.Map{Time: t.toNS(raw), Pid: int(im.PID), Start: im.Base, End: im.Base + im.Size, Path: path}
	if t.identify != nil {
		if id := t.identify(im, path); id != nil {
			// A PE's relative addresses are RVAs: from where it loaded.
			m.Image, m.ImageBase = id, im.Base
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

// DiskIdentity reads an image's identity from its PE file at path, when
// the file is the one that was loaded: the same size, and the same
// TimeDateStamp when known. A live session gets no identity events, and
// a trace need not have them; the file on disk then tells, where the
// trace is read on the machine it was recorded on. A file without a
// CodeView record gives none: nothing finds its symbols but its name.
func DiskIdentity(path string, size uint64, timeDateStamp uint32) *objfile.Identity {
	f, err := objfile.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	tds, sizeOfImage, ok := f.PEHeader()
	if _, hasPDB := f.PDB(); !ok || !hasPDB || uint64(sizeOfImage) != size || timeDateStamp != 0 && timeDateStamp != tds {
		return nil
	}
	// Symbol servers know a PE by its PDB's file name, which objfile
	// makes the debug name.
	id := f.Identity()
	return &id
}
