// Package format holds gprof's in-memory profile model and the readers and
// writers that move it to and from files.
//
// The model mirrors what the Firefox Profiler needs: processes own their
// library mappings, threads own their samples, and each thread interns its
// frames and stacks so that memory grows with distinct stacks, not with
// samples. Times are nanoseconds since Profile.Meta.StartTime.
package profile

import (
	"cmp"
	"slices"
	"time"
)

// Category indexes Meta.Categories. The first three are fixed so writers and
// readers agree on them without looking them up.
type Category uint8

const (
	CategoryOther  Category = iota // grey: the default the Firefox Profiler requires
	CategoryUser                   // user-space native code
	CategoryKernel                 // kernel code
)

// KernelLabel is the frame that stands for kernel code in a sample taken in
// the kernel without its kernel stack.
const KernelLabel = "[kernel]"

// ExitLabel and ExecLabel stand for the user stack under a sample taken in
// the kernel where the thread had none: in its exit, after its user memory
// was released (the kernel gives no user registers then), or in an exec
// that had replaced its address space, whose old user stack is not the new
// program's. The kernel's frames (or KernelLabel) go on top of them, as on
// top of a user stack.
const (
	ExitLabel = "[exit]"
	ExecLabel = "[exec]"
)

// Categories of the off-CPU samples of a recording with off-CPU sampling
// (OffCPUCategories): a thread blocked (waiting on I/O, a lock, a timer),
// or preempted while still runnable. "Idle" with the colour "transparent"
// is the Firefox Profiler's own convention for time a thread spends
// waiting.
const (
	CategoryIdle Category = iota + 3
	CategoryPreempted
)

// CategoryPython is the category of Python frames: functions a CPython
// interpreter was running, in place of its eval function's frames.
const CategoryPython Category = CategoryPreempted + 1

// PythonCategories are the categories of a profile with Python frames:
// OffCPUCategories plus Python.
var PythonCategories = []CategoryInfo{
	{Name: "Other", Color: "grey"},
	{Name: "User", Color: "yellow"},
	{Name: "Kernel", Color: "orange"},
	{Name: "Idle", Color: "transparent"},
	{Name: "Preempted", Color: "lightblue"},
	{Name: "Python", Color: "blue"},
}

// OffCPUCategories are DefaultCategories plus those of off-CPU samples.
var OffCPUCategories = []CategoryInfo{
	{Name: "Other", Color: "grey"},
	{Name: "User", Color: "yellow"},
	{Name: "Kernel", Color: "orange"},
	{Name: "Idle", Color: "transparent"},
	{Name: "Preempted", Color: "lightblue"},
}

// OffCPUMarkerType is the payload type of the markers of long waits off
// the CPU. Their Data holds "function" (the innermost function of the
// stack it waited in), "stack" (its callers), and where known "syscall"
// and "wchan" (the kernel function it slept in).
const OffCPUMarkerType = "OffCPU"

// TracepointMarkerType is the payload type of the markers of tracepoint
// and probe hits: Data holds "fields", the hit's fields as perf script
// prints them; the marker's name is the event's, its Cause the stack of
// the hit.
const TracepointMarkerType = "Tracepoint"

// MarkerFileType is the payload type of the markers a program wrote to a
// marker file (samply's convention: marker-PID.txt, "START END NAME"
// lines): the marker's name is the line's; Data holds "file", where it
// came from.
const MarkerFileType = "MarkerFile"

// CategoryInfo describes one category in the order of Category values.
type CategoryInfo struct {
	Name  string
	Color string // one of the Firefox Profiler's palette names
}

// DefaultCategories are the categories every gprof profile declares.
var DefaultCategories = []CategoryInfo{
	{Name: "Other", Color: "grey"},
	{Name: "User", Color: "yellow"},
	{Name: "Kernel", Color: "orange"},
}

// Profile is a whole recording: one or more processes.
type Profile struct {
	Meta      Meta
	Processes []*Process
	// Symbols holds symbolication results keyed by library identity, so a
	// profile stays readable when its binaries are gone. May be nil.
	Symbols *SymbolTable
	// Overhead is the profiler's own cost, per sampling loop; nil when
	// not measured.
	Overhead *Overhead
}

// Counter is a time series sampled alongside a process's threads, as the
// Gecko sampler's counters: each sample holds the change since the
// previous one (the first, the value itself), so that the Firefox Profiler
// draws the running sum.
type Counter struct {
	Name        string // "Memory", "processCPU", ...
	Category    string // the front-end's graph kind: "Memory", "CPU", "power"
	Description string
	Time        []int64 // ns since Meta.StartTime
	Count       []int64 // change since the previous sample
}

// Overhead is what the profiler itself cost, one entry per sampling loop:
// the CPU time it used since the previous loop, split into the part spent
// reading counters and the rest (taking in and unwinding samples).
type Overhead struct {
	Time     []int64 // ns since Meta.StartTime, at the end of each loop
	Counters []int64 // ns
	Threads  []int64 // ns
}

// Meta describes the recording as a whole.
type Meta struct {
	Product     string
	StartTime   time.Time     // wall-clock time of time zero
	Interval    time.Duration // nominal sampling interval
	OSCPU       string        // e.g. "Linux 6.8.0"
	Platform    string        // e.g. "Linux"
	Arch        string        // e.g. "x86_64"
	LogicalCPUs int
	CPUName     string
	// Duration is when recording stopped, in ns since StartTime.
	Duration int64
	// DataStart is when the kept data starts, in ns since StartTime: 0
	// unless a bounded recording discarded older samples.
	DataStart int64
	// LostEvents counts samples or records the kernel or backend dropped.
	LostEvents uint64
	// PausedRanges are the stretches in which sampling was off (record
	// -D, --control), in time order.
	PausedRanges []PausedRange
	// Categories lists frame categories; nil means DefaultCategories.
	Categories []CategoryInfo
	// Extra holds free-form facts (backend, event, command line) that writers
	// may surface; keys are stable strings.
	Extra map[string]string
}

// PausedRange is a stretch of a recording with sampling off, as the
// Firefox Profiler's pausedRanges: Start and End are ns since
// Meta.StartTime, End < 0 when sampling was still off as recording
// stopped. Reason is the front-end's: PausedByProfiler.
type PausedRange struct {
	Start, End int64
	Reason     string
}

// PausedByProfiler is the reason of a stretch the profiler was told to
// pause: the Firefox Profiler's "profiler-paused".
const PausedByProfiler = "profiler-paused"

// Process is one OS process.
type Process struct {
	Pid  int
	Name string // command name (argv[0] base name or comm)
	// Start and End are ns since Meta.StartTime; End < 0 means still running
	// when recording stopped.
	Start, End int64
	Libs       []Lib // sorted by Start, non-overlapping (see SortLibs)
	Threads    []*Thread
	// Counters are the process's own series (memory, CPU); may be nil.
	Counters []Counter
	// ExitCode is the process's exit status when known, else -1.
	ExitCode int
	// Exec is true when this process began with an exec(2) that replaced
	// the program of the latest earlier Process with the same Pid: the
	// same OS process, running a new image with new mappings. Each image
	// is a Process of its own because addresses mean different things in
	// each; OSProcesses groups them back together.
	Exec bool
}

// Lib is one mapping of a binary into a process's address space.
// Offset is what the Firefox Profiler calls the offset: Start minus the
// address the binary's relative addresses count from.
type Lib struct {
	Start, End, Offset uint64
	Name, Path         string
	DebugName          string
	DebugPath          string
	BreakpadID         string // 33 uppercase hex chars for ELF (GUID + age 0)
	CodeID             string // ELF build-id in lowercase hex; empty if none
	Arch               string
}

// Key is the identity the Firefox Profiler and symbol servers use.
func (l *Lib) Key() LibKey { return LibKey{DebugName: l.DebugName, BreakpadID: l.BreakpadID} }

// LibKey identifies a binary independent of where it was mapped.
type LibKey struct {
	DebugName  string
	BreakpadID string
}

// Thread is one OS thread and everything sampled on it.
type Thread struct {
	Tid  int
	Name string
	Main bool // the process's main thread (tid == pid on Linux)
	// Start and End are ns since Meta.StartTime; End < 0 means still alive.
	Start, End int64

	Frames  FrameTable
	Stacks  StackTable
	Samples SampleTable
	Markers []Marker
	// Events holds the samples of the recording's other events (page
	// faults, tracepoint hits...), one table per event, their stacks in
	// the thread's tables; Samples holds the first event's, which
	// Meta.Extra["event"] names. Nil for a recording of one event.
	Events []EventSamples
}

// EventSamples are a thread's samples of one event other than the
// profile's first. Their Weight, when set, is how many occurrences of the
// event each stands for (its period); their CPUDelta is -1 (unknown) or
// empty.
type EventSamples struct {
	Event   string // as perf names it: "page-faults", "sched:sched_switch"
	Samples SampleTable
}

// EventTable returns th's table of event name, adding an empty one if it
// has none.
func (th *Thread) EventTable(name string) *SampleTable {
	for i := range th.Events {
		if th.Events[i].Event == name {
			return &th.Events[i].Samples
		}
	}
	th.Events = append(th.Events, EventSamples{Event: name})
	return &th.Events[len(th.Events)-1].Samples
}

// Frame is one entry of a thread's frame table: either a native address or
// a label (a pre-symbolicated or non-native frame).
type Frame struct {
	Address  uint64 // absolute instruction address; meaningful when Label == ""
	Label    string
	Category Category
	// File, for a label frame of an interpreted language (a Python
	// function, CategoryPython), is its source file; Line the line it was
	// running and FuncLine the line its function starts on (0 when not
	// known). Empty for other frames.
	File           string
	Line, FuncLine int32
}

// FrameTable interns frames.
type FrameTable struct {
	Frames []Frame
	index  map[Frame]int32
}

// Intern returns the index of f, adding it if new.
func (t *FrameTable) Intern(f Frame) int32 {
	if t.index == nil {
		t.index = make(map[Frame]int32, len(t.Frames))
		for i, fr := range t.Frames {
			t.index[fr] = int32(i)
		}
	}
	if i, ok := t.index[f]; ok {
		return i
	}
	i := int32(len(t.Frames))
	t.Frames = append(t.Frames, f)
	t.index[f] = i
	return i
}

// Len returns the number of frames.
func (t *FrameTable) Len() int { return len(t.Frames) }

// NoStack is the stack index of a sample without a stack, and the prefix of
// a root stack.
const NoStack int32 = -1

// StackTable interns stacks as a prefix tree: each stack is a frame on top
// of a prefix stack (NoStack for roots).
type StackTable struct {
	Prefix []int32
	Frame  []int32
	index  map[uint64]int32
}

// Intern returns the index of the stack frame-on-prefix, adding it if new.
func (t *StackTable) Intern(prefix, frame int32) int32 {
	if t.index == nil {
		t.index = make(map[uint64]int32, len(t.Frame))
		for i := range t.Frame {
			t.index[stackKey(t.Prefix[i], t.Frame[i])] = int32(i)
		}
	}
	k := stackKey(prefix, frame)
	if i, ok := t.index[k]; ok {
		return i
	}
	i := int32(len(t.Frame))
	t.Prefix = append(t.Prefix, prefix)
	t.Frame = append(t.Frame, frame)
	t.index[k] = i
	return i
}

func stackKey(prefix, frame int32) uint64 { return uint64(uint32(prefix))<<32 | uint64(uint32(frame)) }

// Len returns the number of stacks.
func (t *StackTable) Len() int { return len(t.Frame) }

// InternStack interns a whole stack given leaf first (as unwinders produce
// it) and returns its index, or NoStack for an empty stack.
func (th *Thread) InternStack(leafFirst []Frame) int32 {
	s := NoStack
	for i := len(leafFirst) - 1; i >= 0; i-- {
		s = th.Stacks.Intern(s, th.Frames.Intern(leafFirst[i]))
	}
	return s
}

// SampleTable is a column store of samples in time order.
type SampleTable struct {
	Stack    []int32 // NoStack when the sample has no stack
	Time     []int64 // ns since Meta.StartTime
	CPUDelta []int64 // ns of CPU the thread used since its previous sample; -1 unknown
	// Weight is nil when every sample weighs 1.
	Weight []int32
}

// Add appends one sample.
func (t *SampleTable) Add(stack int32, time, cpuDelta int64) {
	t.Stack = append(t.Stack, stack)
	t.Time = append(t.Time, time)
	t.CPUDelta = append(t.CPUDelta, cpuDelta)
	if t.Weight != nil {
		t.Weight = append(t.Weight, 1)
	}
}

// Len returns the number of samples.
func (t *SampleTable) Len() int { return len(t.Stack) }

// MarkerPhase follows the Firefox Profiler's marker phases.
type MarkerPhase uint8

const (
	PhaseInstant MarkerPhase = iota
	PhaseInterval
	PhaseIntervalStart
	PhaseIntervalEnd
)

// Marker is a point or span of interest on a thread's timeline.
type Marker struct {
	Name string
	// Start and End are ns since Meta.StartTime. Instants and interval
	// starts use only Start, interval ends only End.
	Start, End int64
	Phase      MarkerPhase
	Category   Category
	// Data is the marker payload; "type" names its schema.
	Data map[string]any
	// Cause is 1 + the index in the thread's stack table of the stack
	// the marker was made at (a tracepoint hit's, a file operation's
	// call), which the Firefox Profiler shows with it; 0 when it has
	// none.
	Cause int32
}

// SortLibs sorts libs by start address and makes their ranges disjoint, as
// the Firefox Profiler's address lookup requires. Where two mappings overlap,
// the one that starts first (or, at equal starts, the larger one) keeps its
// range and the other is trimmed to the part after it, with Offset advanced
// to match, or dropped when nothing is left. Empty ranges are dropped. Ties
// are broken on every field so the result does not depend on input order.
// SortLibs reorders libs in place and returns the shortened slice.
func SortLibs(libs []Lib) []Lib {
	slices.SortFunc(libs, compareLibs)
	out := libs[:0]
	for _, l := range libs {
		if n := len(out); n > 0 && l.Start < out[n-1].End {
			prevEnd := out[n-1].End
			if l.End <= prevEnd {
				continue
			}
			l.Offset += prevEnd - l.Start
			l.Start = prevEnd
		}
		if l.End <= l.Start {
			continue
		}
		out = append(out, l)
	}
	return out
}

func compareLibs(a, b Lib) int {
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	if c := cmp.Compare(b.End, a.End); c != 0 {
		return c
	}
	return cmp.Or(
		cmp.Compare(a.Offset, b.Offset),
		cmp.Compare(a.Path, b.Path),
		cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.DebugName, b.DebugName),
		cmp.Compare(a.DebugPath, b.DebugPath),
		cmp.Compare(a.BreakpadID, b.BreakpadID),
		cmp.Compare(a.CodeID, b.CodeID),
		cmp.Compare(a.Arch, b.Arch),
	)
}
