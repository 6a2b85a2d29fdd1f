package record

import (
	"fmt"
	"time"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/symbolize/remote"
)

// A dump (gprof dump) is a recording of one sample per thread, taken with
// every thread stopped at once (attach.Dump): the same pipeline turns it
// into stacks, unwound from the stack copies, with Python frames in place
// of the interpreter's and names resolved, which Dump then lays out frame
// by frame, innermost first, as a debugger's backtrace.

// DumpOptions configure a dump.
type DumpOptions struct {
	Pid int
	// Tids, when set, are the threads to dump; nil dumps them all.
	Tids []int
	// StackSize bytes of each thread's stack are copied; 0 for the
	// backend's default.
	StackSize  int
	NoPython   bool
	SymbolDirs []string
	Remote     *remote.Client
	Notice     func(string)
}

// Dump is every thread's stack of a process at one instant.
type Dump struct {
	Pid     int
	Name    string   // the process's name
	Argv    []string // its command line, when it could be read
	Backend string
	// Stopped is how long its threads were held stopped.
	Stopped time.Duration
	Threads []DumpedThread
	// Profile is the dump as a profile, one sample per thread.
	Profile *profile.Profile
}

// DumpedThread is one thread of a dump.
type DumpedThread struct {
	Tid  int
	Name string
	// State is the thread's /proc state letter before it was stopped,
	// Wchan the kernel function it slept in (when the kernel tells).
	State byte
	Wchan string
	// Frames, innermost first; none when its stack could not be taken
	// (Error says why).
	Frames []DumpFrame
	Error  string
}

// DumpFrame is one frame of a thread's stack.
type DumpFrame struct {
	// Address is the frame's instruction address (for a caller, its
	// return address); 0 for a Python frame.
	Address  uint64
	Function string // "" when not known
	File     string
	Line     int
	// Lib is the base name of the binary it is in.
	Lib string
	// Python: a Python function's frame, File and Line its source.
	Python bool
	// Inlined: a function inlined into the next frame's; Address is the
	// outer frame's.
	Inlined bool
}

// StateName says what a /proc thread state letter means.
func StateName(s byte) string {
	switch s {
	case 'R':
		return "running"
	case 'S':
		return "sleeping"
	case 'D':
		return "uninterruptible sleep"
	case 'T':
		return "stopped"
	case 't':
		return "traced"
	case 'Z':
		return "zombie"
	case 'X':
		return "dead"
	case 'I':
		return "idle"
	}
	return "unknown"
}

// TakeDump dumps the stacks of opts.Pid's threads.
func TakeDump(opts DumpOptions) (*Dump, error) {
	start := time.Now()
	t0 := event.Now()
	prof := &profile.Profile{Meta: hostMeta(start, Options{})}
	b := newBuilder(t0, prof)
	libs := newLibResolver(opts.SymbolDirs)
	libs.remote = opts.Remote
	defer libs.close()
	b.onMap = libs.observe
	u := newUserUnwinder()
	u.jit = libs.jitDumpOf
	defer u.close()
	b.unwindUser = u.unwind
	ao := attach.DumpOptions{Pid: opts.Pid, Tids: opts.Tids, StackSize: opts.StackSize, Notice: opts.Notice}
	if !opts.NoPython {
		b.py = newPyStage()
		ao.Interp, ao.InterpFind = b.py.read, b.py.find
	}
	var argv []string
	res, err := attach.Dump(ao, func(ev event.Event) {
		if c, ok := ev.(*event.Comm); ok && argv == nil {
			argv = c.Argv
		}
		b.handle(ev)
	})
	if err != nil {
		return nil, err
	}
	end := event.Now()
	procs := b.finish(end)
	prof.Meta.Duration = end - t0
	prof.Meta.Extra["backend"] = res.Backend
	prof.Meta.Extra["dump_stopped_ms"] = fmt.Sprintf("%.3f", res.Stopped.Seconds()*1000)
	d := &Dump{Pid: opts.Pid, Argv: argv, Backend: res.Backend, Stopped: res.Stopped, Profile: prof}
	var pr *profile.Process
	for _, p := range procs {
		p.p.Libs = libs.libsFor(p)
		prof.Processes = append(prof.Processes, p.p)
		if p.p.Pid == opts.Pid {
			pr = p.p
		}
	}
	if st, err := libs.symbolize(prof); err != nil && opts.Notice != nil {
		opts.Notice(fmt.Sprintf("some names could not be resolved: %v", err))
	} else {
		for _, n := range st.RejectedDebugFiles() {
			if opts.Notice != nil {
				opts.Notice(n)
			}
		}
	}
	if pr != nil {
		d.Name = pr.Name
	}
	for _, th := range res.Threads {
		dt := DumpedThread{Tid: th.Tid, Name: th.Name, State: th.State, Wchan: th.Wchan, Error: th.Why}
		if pr != nil && th.Captured {
			for _, pt := range pr.Threads {
				if pt.Tid == th.Tid && pt.Samples.Len() > 0 {
					dt.Frames = dumpFrames(prof, pr, pt, pt.Samples.Stack[0])
				}
			}
		}
		if th.Captured && len(dt.Frames) == 0 && dt.Error == "" {
			dt.Error = "no frames could be unwound from its stack"
		}
		d.Threads = append(d.Threads, dt)
	}
	return d, nil
}

// dumpFrames lays out stack s of thread th, innermost frame first, inlined
// functions expanded.
func dumpFrames(p *profile.Profile, pr *profile.Process, th *profile.Thread, s int32) []DumpFrame {
	var out []DumpFrame
	for i := 0; s != profile.NoStack; i++ {
		caller := i > 0
		f := th.Frames.Frames[th.Stacks.Frame[s]]
		s = th.Stacks.Prefix[s]
		switch {
		case f.Category == profile.CategoryPython:
			out = append(out, DumpFrame{Function: f.Label, File: f.File, Line: int(f.Line), Python: true})
			continue
		case f.Label != "":
			out = append(out, DumpFrame{Function: f.Label})
			continue
		}
		df := DumpFrame{Address: f.Address}
		var syms []profile.SymbolFrame
		if l := profile.FindLib(pr.Libs, f.Address); l != nil {
			df.Lib = l.Name
			syms = p.Symbols.LookupFrame(l.Key(), l.Rel(f.Address), caller)
		}
		if len(syms) == 0 {
			out = append(out, df)
			continue
		}
		// Innermost first: the inlined callees, then the function
		// they are inlined into, which holds the address.
		for j := len(syms) - 1; j >= 0; j-- {
			x := df
			x.Function, x.File, x.Line = syms[j].Function, syms[j].File, syms[j].Line
			x.Inlined = j > 0
			out = append(out, x)
		}
	}
	return out
}
