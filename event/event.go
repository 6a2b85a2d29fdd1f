// Package event is the neutral event model every source of samples
// speaks: the live backends under attach/, the file readers (perf.data,
// ETL) and the recorder that builds a profile from them. A sample, an
// image mapped or unmapped, a thread or process started, renamed or
// exited, a context switch, lost data: each is one struct here, with its
// time on the host's monotonic clock (Now). Of gprof it imports only
// objfile, for an image's identity (objfile.Identity, the one type that
// names a binary), and objfile imports nothing of gprof: so event stays
// below every backend, file reader and recorder that uses it, and none of
// them imports another for these types.
package event

import "github.com/gprof-dev/gprof/objfile"

// Event is one of *Sample, *Map, *Unmap, *Comm, *Fork, *Exit, *Lost, *Switch.
type Event interface{ eventTime() int64 }

// Times are nanoseconds on the host's monotonic clock (CLOCK_MONOTONIC on
// Linux), the same clock as Now.

// Sample is one stack sample of one thread.
type Sample struct {
	Time     int64
	Pid, Tid int
	CPU      int
	// CPUDelta is the CPU time in ns the thread used since its previous
	// sample (or since sampling began for its first); -1 when unknown.
	CPUDelta int64
	// Stack holds absolute addresses, leaf first: the interrupted
	// instruction, then return addresses. The first KernelFrames entries are
	// kernel addresses.
	Stack        []uint64
	KernelFrames int
	// KernelFrom, when not 0, is where the kernel's half of the address
	// space starts: addresses of Stack at or above it past the first
	// KernelFrames are kernel frames too (on Windows the kernel calls
	// back into user mode, so a stack can have kernel frames in its
	// middle).
	KernelFrom uint64
	// InKernel says the thread was running in the kernel (a system call,
	// a fault, an interrupt) when sampled. Stack then starts with kernel
	// frames only if they were asked for and permitted; the user part is
	// the user stack where the thread entered the kernel.
	InKernel bool
	// NoUserRegs says the backend asked for the thread's user registers
	// and the kernel had none to give: a kernel thread, or a user task
	// whose user memory is gone (in its exit). Stack then has no user
	// part.
	NoUserRegs bool
	// Regs and StackCopy are set instead of (or in addition to) user frames
	// in Stack when the backend leaves user-space unwinding to the caller.
	Regs      *Regs
	StackCopy []byte
	// Interp is what Options.Interp returned for this sample (an
	// interpreter's frames); nil when not asked for or none. InterpLate
	// says it was read after the sample while the thread ran on (perf),
	// so that whoever uses it must check it against the sample's stack.
	Interp     any
	InterpLate bool
	// CalleeRegs are more of the sample's registers (x86-64 r12-r15)
	// where a backend captured them for checking a late Interp; nil
	// otherwise.
	CalleeRegs []uint64
	// Switch marks a sample taken as the thread was switched out (with
	// Options.OffCPU): its stack is where the thread blocked or was
	// preempted, and it used no CPU. The Switch event that follows says
	// which.
	Switch bool
	// Event is which of the recording's sampling events took the sample:
	// its index among those asked for (attach.Options.Events), 0 for the
	// first, which is the only one of most recordings.
	Event int
	// Period is how many occurrences of a counting event (page faults,
	// tracepoint hits, cycles) the sample stands for; 0 for an event that
	// counts CPU time (CPUDelta says how much), or when not known.
	Period uint64
	// Fields are a tracepoint's or probe's hit's fields, as perf script
	// prints them ("name=value name=value"); nil for other events.
	Fields []byte
}

// Switch reports a thread leaving (Out) or returning to a CPU, with
// Options.OffCPU. Preempt says a thread switched out was still runnable
// (involuntary preemption) rather than blocked.
type Switch struct {
	Time     int64
	Pid, Tid int
	Out      bool
	Preempt  bool
	// Wchan is the kernel function a thread switched out sleeps in, when
	// the backend read it (ptrace, from /proc/PID/task/TID/wchan).
	Wchan string
}

// Regs are the user registers an unwinder needs, in a portable shape.
type Regs struct {
	IP, SP, FP uint64
	LR         uint64 // arm64 only
	BX         uint64 // x86-64 only, where the backend captures it (see unwind.Regs)
}

// Map reports a file (or anonymous region) mapped executable into a
// process: an image loaded. With Image set it names the image by identity
// rather than by a file to read.
type Map struct {
	Time int64
	Pid  int
	// Tid is the thread that made the mapping, where the backend knows
	// it (perf does); 0 otherwise.
	Tid        int
	Start, End uint64
	FileOffset uint64
	Path       string
	BuildID    []byte // GNU build-id when the kernel reported it
	// Dev and Inode identify the file as mapped; with MapFile they let a
	// reader open the mapped file even after it was deleted or replaced.
	Dev, Inode uint64
	// MapFile is a path that opens the mapped file itself while the process
	// lives (/proc/PID/map_files/START-END on Linux); empty if unavailable.
	MapFile string
	// Image, when set, is the image's identity as the backend knows it,
	// for an image with no file of its own on disk (a library in macOS's
	// dyld shared cache) or one the backend read itself (Windows); Path
	// then only names it. Its DebugName and DebugPath, when empty, mean
	// the image's own name and path; its Arch, when empty, that the
	// architecture is not known. Linux backends leave it nil: their images
	// are files, identified by reading them.
	Image *objfile.Identity
	// ImageBase, with Image, is the address in the process where the
	// image's relative address 0 lies: where it was loaded (a PE image's
	// base, the slid address of a Mach-O image's __TEXT segment).
	ImageBase uint64
	// Data marks a mapping of data, not code, that the recorder asked to
	// hear of (a marker file a program maps so that profilers find it);
	// it is no image.
	Data bool
}

// Unmap reports that [Start, End) of a process no longer holds what a Map
// reported there: an image unloaded. Linux's perf has no such record; the
// range is then simply reused by a later Map.
type Unmap struct {
	Time       int64
	Pid        int
	Start, End uint64
}

// Comm reports a thread's name, and whether it changed because of exec.
type Comm struct {
	Time     int64
	Pid, Tid int
	Name     string
	Exec     bool
	// Argv is the process's command line when the backend could read it
	// (at exec or attach).
	Argv []string
}

// Fork reports a new thread (Pid == Ppid, see NewThread) or process.
type Fork struct {
	Time       int64
	Pid, Tid   int
	Ppid, Ptid int
}

// NewThread reports whether e starts a thread in an existing process
// rather than a new process.
func (e *Fork) NewThread() bool { return e.Pid == e.Ppid }

// Exit reports a thread's exit; when Tid == Pid the process exited.
type Exit struct {
	Time     int64
	Pid, Tid int
	// ExitCode is the process's exit status when ExitKnown (Windows
	// reports every process's).
	ExitCode  int
	ExitKnown bool
}

// Lost reports records the kernel or backend dropped.
type Lost struct {
	Time  int64
	Count uint64
}

// EventTime returns when e happened (monotonic ns).
func EventTime(e Event) int64 { return e.eventTime() }

func (e *Sample) eventTime() int64 { return e.Time }
func (e *Map) eventTime() int64    { return e.Time }
func (e *Unmap) eventTime() int64  { return e.Time }
func (e *Comm) eventTime() int64   { return e.Time }
func (e *Fork) eventTime() int64   { return e.Time }
func (e *Exit) eventTime() int64   { return e.Time }
func (e *Lost) eventTime() int64   { return e.Time }
func (e *Switch) eventTime() int64 { return e.Time }

// Handler receives events. A backend calls it from one goroutine at a time,
// in nearly time order, and never after Record returns. The event and its
// slices may be reused after the handler returns.
type Handler func(Event)
