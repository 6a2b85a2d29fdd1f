package attach

import (
	"fmt"
	"time"

	"github.com/gprof-dev/gprof/event"
)

// DumpOptions say whose stacks Dump takes.
type DumpOptions struct {
	Pid int
	// Tids, when set, are the threads of Pid to dump; nil dumps them all.
	Tids []int
	// StackSize is how many bytes of each thread's stack are copied for
	// unwinding.
	StackSize int
	// Interp reads what an interpreter runs in a thread, while it is
	// stopped (see Options.Interp).
	Interp func(pid, tid int, mem Memory) any
	// InterpFind finds the interpreter, before the threads are stopped
	// (see Options.InterpFind).
	InterpFind func(pid int, mem Memory)
	// Notice receives one-line notices; nil discards them.
	Notice func(string)
}

// DumpResult says how a dump went.
type DumpResult struct {
	Backend string
	// Threads are the threads dumped, in order of tid, with what /proc
	// said of them before they were stopped.
	Threads []DumpThread
	// Stopped is how long the threads were held stopped: from the first
	// stop asked for to the last thread let go.
	Stopped time.Duration
}

// DumpThread is one thread of a dump.
type DumpThread struct {
	Tid  int
	Name string
	// State is the thread's state letter in /proc (R running, S
	// sleeping, D uninterruptible, T stopped, t traced, Z zombie), read
	// before it was stopped; Wchan the kernel function it slept in, when
	// the kernel tells.
	State byte
	Wchan string
	// Captured says its stack was taken; Why says why not, when not.
	Captured bool
	Why      string
}

// Dump stops every thread of a process (or those of opts.Tids) at once,
// takes each one's registers, a copy of its stack and what its
// interpreter runs, and lets them go again: the stacks come to h as one
// sample per thread, after the mappings and names they need, once the
// threads run again. Only a backend registered with Driver.Dump can.
func Dump(opts DumpOptions, h event.Handler) (DumpResult, error) {
	for _, d := range registered() {
		if d.Dump != nil {
			return d.Dump(opts, h)
		}
	}
	return DumpResult{}, fmt.Errorf("dumping stacks is not supported on this platform yet: %w", ErrUnsupported)
}
