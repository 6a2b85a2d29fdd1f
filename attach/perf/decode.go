//go:build linux

package perf

import (
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/proc"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/perfrecord"
)

// Ring records are decoded by package perfrecord, as perf.data files are;
// all events sharing a ring have the same attr, so one decoder per session
// knows the layout of every record it sees. What only a live target can
// tell is added here.

// batch owns the events of one drain and the memory they point into, so a
// batch can be handed to the handler goroutine while the next one fills.
type batch struct {
	arena   perfrecord.Arena
	events  []event.Event
	lost    uint64
	notices []string
}

func (b *batch) reset() {
	clear(b.events)
	b.events = b.events[:0]
	b.arena.Reset()
	b.lost = 0
	b.notices = b.notices[:0]
}

// maxInterpLate is how long after its sample (ns) a thread's Python
// stack may still be read (see decode).
const maxInterpLate = 3e6

// decoder decodes ring records into a batch.
type decoder struct {
	*perfrecord.Decoder

	// filter, when set, keeps only the records of its targets (the
	// per-CPU layout's events see every task; see layout.go).
	filter *targets

	// statMaps fills Dev/Inode of MMAP2 records that carry a build-id
	// instead, by stat'ing the mapping; off in tests of hand-made records.
	statMaps bool
	// readArgv reads /proc/PID/cmdline on exec.
	readArgv bool

	// interp is attach.Options.Interp; interpSeen is set once it found
	// an interpreter, from when the rings are read at once (see run).
	interp     func(pid, tid int, mem attach.Memory) any
	interpFind func(pid int, mem attach.Memory)
	interpSeen bool
	// interpFiles says which processes interpFind is for.
	interpFiles interpFiles
	// walker, when set, has copied the frames of the threads it was told
	// of at their samples; interpWalk says how to walk a thread's.
	walker     *pyWalker
	interpWalk func(pid, tid int) (attach.InterpWalk, bool)
	// noWalker is said once, when an interpreter is first found and the
	// walker could not be loaded.
	noWalker string

	// pace, when set, is told of every target sample, and may drop it
	// (see pacing.keep); interval is the nominal one.
	pace     *pacing
	interval int64
	// procExited is set when a process's main thread exits (the reader
	// then checks whether any target is left).
	procExited bool
}

// newDecoder returns a decoder of records of format f in this host's
// byte order.
func newDecoder(f perfrecord.Format) *decoder {
	return &decoder{Decoder: perfrecord.NewDecoder(ne, f), statMaps: true, readArgv: true}
}

// setFilter makes d keep only the records of t's tasks.
func (d *decoder) setFilter(t *targets) {
	d.filter = t
	d.Filter = t
}

// decode appends the event of one record to b. rec is only valid during
// the call; everything kept is copied into b.
func (d *decoder) decode(rec []byte, b *batch) {
	e := d.Decode(rec, &b.arena)
	switch e := e.(type) {
	case nil:
		return
	case *event.Sample:
		if e.Pid < 0 {
			// A task sampled after the kernel let go of its pid, in the
			// last instants of its exit: a cgroup's per-CPU events
			// sample it until it is switched out for good. Nobody's
			// sample (perf shows it as pid -1).
			return
		}
		if !d.pace.keep(e, d.interval) {
			return
		}
		if d.interp != nil && !e.Switch {
			d.readInterp(e, b)
		}
	case *event.Map:
		d.interpFiles.note(e)
		e.MapFile = proc.MapFilePath(e.Pid, e.Start, e.End)
		if d.statMaps && ne.Uint16(rec[4:])&perfrecord.MiscMmapBuildID != 0 {
			e.Dev, e.Inode = statMapping(e.MapFile, e.Path)
		}
	case *event.Comm:
		if e.Exec {
			d.walker.forgetProcess(e.Pid)
			d.interpFiles.forget(e.Pid)
		}
		if e.Exec && d.readArgv {
			e.Argv = proc.ReadCmdline(e.Pid)
		}
	case *event.Fork:
		d.interpFiles.fork(e)
	case *event.Exit:
		d.procExited = d.procExited || e.Pid == e.Tid
		d.walker.forget(e.Tid)
		if e.Pid == e.Tid {
			d.walker.forgetProcess(e.Pid)
			d.interpFiles.forget(e.Pid)
		}
	case *event.Lost:
		b.lost += e.Count
		d.interpFiles.lose()
	}
	b.events = append(b.events, e)
}

// readInterp reads the interpreter stack of sample e's thread: as the
// frame walker copied it at the sample where it did, else as the thread
// runs now.
func (d *decoder) readInterp(e *event.Sample, b *batch) {
	mem := attach.ProcessMemory(e.Pid)
	var ip uint64
	if e.Regs != nil {
		ip = e.Regs.IP
	}
	if snap, wk := d.walker.take(e.Pid, e.Tid, e.Time, ip); snap != nil {
		e.Interp = d.interp(e.Pid, e.Tid, snapMemory{snap: snap, walk: wk, live: mem})
	} else {
		// The thread ran on since the sample: what it runs now may not
		// be what it ran then (event.Sample.InterpLate), and the later,
		// the likelier. Past maxInterpLate it is not read at all: which
		// samples that drops depends on when gprof got a CPU, not on
		// what the target ran.
		e.InterpLate = true
		if d.interpSeen && event.Now()-e.Time > maxInterpLate {
			return
		}
		if d.interpFind != nil && d.interpFiles.may(e.Pid) {
			// The target runs on meanwhile: nothing waits for gprof
			// here.
			d.interpFind(e.Pid, mem)
		}
		e.Interp = d.interp(e.Pid, e.Tid, mem)
	}
	if e.Interp == nil {
		return
	}
	if !d.interpSeen {
		d.interpSeen = true
		if d.noWalker != "" {
			b.notices = append(b.notices, d.noWalker)
		}
	}
	if d.walker != nil && d.interpWalk != nil {
		if wk, ok := d.interpWalk(e.Pid, e.Tid); ok {
			d.walker.set(e.Pid, e.Tid, wk)
		}
	}
}

// interpFiles follows which processes map a file that may hold the
// interpreter (attach.Options.InterpFile), from the mappings the reader
// decodes anyway, so that the reader looks for an interpreter only in
// those. Looking in every process sampled (InterpFind reads its
// /proc/PID/exe every 5 ms, its maps every 20 ms to a second) took a 64
// ms C program's reader rounds from about 60 µs to 200-1,200 µs, on the
// program's CPU as often as not.
type interpFiles struct {
	mayHold func(path string) bool // nil: every process may
	// mu: the mappings of processes attached to are noted while the
	// rings are drained (whileDraining).
	mu     sync.Mutex
	mapped map[int]bool
	// lost: records were lost, among them perhaps such a mapping.
	lost bool
}

// note notes a mapping of process m.Pid.
func (f *interpFiles) note(m *event.Map) {
	if f.mayHold == nil || !f.mayHold(m.Path) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mapped == nil {
		f.mapped = map[int]bool{}
	}
	f.mapped[m.Pid] = true
}

// forget forgets what process pid mapped: it exec'd (its new program's
// mappings come after) or exited.
func (f *interpFiles) forget(pid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.mapped, pid)
}

// fork gives a new process its parent's mappings (a forked Python's
// workers run the interpreter they inherit, with no mapping records).
func (f *interpFiles) fork(e *event.Fork) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !e.NewThread() && f.mapped[e.Ppid] {
		f.mapped[e.Pid] = true
	}
}

// lose notes that records were lost.
func (f *interpFiles) lose() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lost = true
}

// may reports whether process pid may run the interpreter.
func (f *interpFiles) may(pid int) bool {
	if f.mayHold == nil {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lost || f.mapped[pid]
}

// statMapping finds the device and inode of a mapping whose MMAP2 record
// carried a build-id instead: through map_files while the process lives,
// else the path (which may since have been replaced).
func statMapping(mapFile, path string) (dev, ino uint64) {
	var st unix.Stat_t
	if unix.Stat(mapFile, &st) == nil {
		return st.Dev, st.Ino
	}
	if strings.HasPrefix(path, "/") && unix.Stat(path, &st) == nil {
		return st.Dev, st.Ino
	}
	return 0, 0
}
