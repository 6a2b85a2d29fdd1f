// Package attach talks to the operating system about profiling targets:
// it launches or attaches to processes, samples their threads, and reports
// what it sees as a stream of the neutral events of package event. This
// package holds the options and the dispatcher (Record); each backend is
// a package of its own under it (attach/perf, attach/ptrace, attach/etw,
// attach/suspend, attach/mach) that registers itself (Register), and
// package attach/backends links in the ones this platform has. Nothing
// outside attach/ samples the OS.
package attach

import (
	"context"
	"errors"
	"time"

	"github.com/gprof-dev/gprof/event"
)

// Options configure a recording.
type Options struct {
	// Either Command is set, or Pids and Tids, or SystemWide. Pids are
	// processes, sampled whole with the threads and processes they create
	// later; Tids are single threads, sampled alone (not their siblings,
	// nor the threads they create).
	Pids    []int
	Tids    []int
	Command []string // argv; Command[0] is looked up in PATH
	// SystemWide samples every process on the machine, those that start
	// during the recording too, and kernel threads when Kernel is set.
	// With a Command, the recording ends when the command exits. Only
	// backends registered with Driver.SystemWide can.
	SystemWide bool
	Env        []string // environment for Command; nil means inherit
	Dir        string   // working directory for Command; "" means inherit

	Interval time.Duration // time between samples of a running thread
	Kernel   bool          // also record kernel frames, when permitted
	Event    string        // "cpu-clock" (default), "task-clock" or "cycles"; see Events
	// Events, when set, are the events to sample instead of Event, in
	// perf's names (ParseEvents, ParseProbe): the first's samples are a
	// thread's samples, the others' are told apart by event.Sample.Event,
	// their index here. Only backends registered with Driver.Events take
	// any but a clock.
	Events []EventSpec
	// Sampling, when set, hears which events the backend samples, in the
	// order of event.Sample.Event, before it sends any: Events, less
	// what the machine cannot count (a backend says so in a notice).
	Sampling func(events []EventSpec)
	// Switches reports each thread's context switches (event.Switch)
	// without the stacks of OffCPU, so that the recorder can tell how
	// many threads of a process are on a CPU at each moment (its
	// parallelism, for the latency view).
	Switches bool
	// CallGraph selects how user stacks are taken: "fp" (kernel walks frame
	// pointers) or "dwarf" (registers plus a StackSize-byte stack copy).
	CallGraph string
	StackSize int
	// OffCPU also reports each thread's context switches (Switch events)
	// and a stack sample at each switch out (Sample.Switch), so that time
	// off the CPU can be sampled too.
	OffCPU bool
	// OffCPUCap, when positive, caps the switch-out stacks of each thread
	// at about this many a second of its time on a CPU (perf's frequency
	// mode); 0 takes a stack at every switch.
	OffCPUCap int
	// Interp, when set, reads what an interpreter (CPython) runs in a
	// sampled thread, for Sample.Interp: the ptrace backend calls it
	// while the thread is stopped at the sample, perf (whose threads run
	// on) as soon as it reads the sample (Sample.InterpLate). mem reads
	// the process's memory. It may be called from several goroutines at
	// once, and only for samples on the CPU. It only reads: it finds
	// nothing in a process until InterpFind has found its interpreter.
	Interp func(pid, tid int, mem Memory) any
	// InterpFind looks for an interpreter in a process (cheap once one
	// is found, and rate-limited while none is): the slow part, which
	// backends call where waiting keeps no target from running (the
	// ptrace backend's coordinator, never its stoppers; perf's reader).
	InterpFind func(pid int, mem Memory)
	// InterpFile, when set, says whether a file mapped in a process may
	// hold the interpreter. The perf backend then calls InterpFind only
	// for processes that map such a file, as their mapping records say
	// (or where records were lost), rather than at the samples of every
	// process: its reader runs ahead of the targets, often on their CPU,
	// and each look at a process that runs no interpreter (reading its
	// /proc files) took 15-300 µs of a target's time.
	InterpFile func(path string) bool
	// InterpWalk says, once Interp has read a thread's stack, where that
	// thread's interpreter keeps its frames, so that a backend that
	// reads stacks after their samples (perf) can have the kernel copy
	// them at the sample instead; false where it cannot say.
	InterpWalk func(pid, tid int) (InterpWalk, bool)
	// Backend is the backend to use; Auto picks the best one available.
	Backend Backend
	// Control, when set, turns sampling off and on during the recording
	// (see Control); nil samples from start to end.
	Control *Control
	// Notice receives one-line, human-readable notices (fallbacks, lost
	// data); nil discards them.
	Notice func(string)
	// Ahead, when set, sees events that the backend holds back from the
	// handler as soon as it reads them, on the handler's goroutine: the
	// perf backend holds the first ones of a recording (see its run). A
	// recorder does there what cannot wait, such as opening a mapped
	// file while its process still lives. Every event reaches the
	// handler later all the same, in order.
	Ahead func(event.Event)
}

// Result summarizes a finished recording.
type Result struct {
	// ExitCode is the launched command's exit status (128+signal when it
	// was killed), or -1 when not known or nothing was launched.
	ExitCode int
	// Lost totals the records the backend dropped: the same ones it
	// reported as Lost events, not more.
	Lost    uint64
	Backend string // the backend that actually ran
	Event   string // the event that actually sampled
	// NoStackCPU is CPU time that samples' CPUDelta count but that no
	// sample's stack shows, because the kernel would not sample there;
	// NoStackReason says where that was and why.
	NoStackCPU    time.Duration
	NoStackReason string
	// Interval is the time between samples of a running thread that the
	// backend aimed for: Options.Interval, or the backend's limit where
	// it cannot sample that often. Zero means Options.Interval.
	Interval time.Duration
	// RateAdvice is what the backend suggests should it take fewer
	// samples than the interval asks for (see record's rate check); ""
	// for the generic advice.
	RateAdvice string
	// Layout says how the backend arranged its sampling when it had a
	// choice, for the summary (the perf backend: "per-thread" events, as
	// perf record -p opens them, or "per-cpu" events filtered to the
	// targets); Files is how many files that took.
	Layout string
	Files  int
	// End is when sampling stopped (event time), before a launched
	// command that outlived the recording was asked to end and waited
	// for (up to seconds): the profile ends there, not with a stretch
	// where the command ran unsampled. Zero: when Record returned.
	End int64
	// Stats are the backend's own figures on how sampling went (stop
	// latencies, say), by name, for the profile's metadata: diagnostics,
	// not an interface.
	Stats map[string]string
}

// Record samples the targets named in opts until ctx is cancelled, every
// target has exited, or an error occurs, and sends what it sees to h.
// Cancelling ctx is the normal way to stop; it is not an error. Targets that
// were attached are left running and untraced.
func Record(ctx context.Context, opts Options, h event.Handler) (Result, error) {
	return record(ctx, opts, h)
}

// Errors that the CLI turns into advice.
var (
	ErrNoSuchProcess = errors.New("no such process")
	ErrPermission    = errors.New("permission denied")
	ErrUnsupported   = errors.New("not supported on this platform")
)

// InterpWalk is how a thread's interpreter frames are reached from its
// thread state, in the terms a copy made at the sample needs: the bytes a
// stack walk reads of the thread state and of each frame, and the
// pointers it follows.
type InterpWalk struct {
	TState     uint64 // where the thread state is
	TStateSpan int    // bytes of it read
	// FrameAt is where the thread state points at the innermost frame;
	// where CFrameCurrent is not -1 it points at a structure (CPython
	// 3.11 and 3.12's _PyCFrame) holding that pointer at CFrameCurrent.
	FrameAt       int64
	CFrameCurrent int64
	FrameSpan     int   // bytes of a frame read
	Back          int64 // where a frame points at the one that called it

	// Threads, where not zero, is where the address of the process's
	// first thread state is, so that a thread's can be found before
	// anyone asked for it: each points at the next at Next and holds
	// its thread's id (the kernel's) at ThreadID, or with IDIndirect a
	// pointer to a structure holding it at IDOffset, as 32 bits.
	Threads    uint64
	Next       int64
	ThreadID   int64
	IDIndirect bool
	IDOffset   int64
}
