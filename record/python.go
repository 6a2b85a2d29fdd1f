package record

import (
	"fmt"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/python"
)

// Python frames: a stage between unwinding and the stack table that puts,
// in place of each native frame of CPython's eval function, the Python
// frames that call of it was running, as read at the sample (see
// attach.Options.Interp and package python).

// pyStage merges Python stacks into samples and counts how it went.
type pyStage struct {
	reader *python.Reader
	// eval is where each process's eval function was last seen, to
	// count the samples in it whose Python stack could not be read.
	eval map[int][]python.Range
	// samples counts the samples of threads in the eval function;
	// merged those given Python frames; stale those read after the
	// sample (perf) and not seen in it; unread the rest (no stack read,
	// or one whose eval calls do not match the native stack's).
	samples, merged, stale, unread uint64
	regs                           []uint64
}

func newPyStage() *pyStage {
	return &pyStage{reader: python.NewReader(), eval: map[int][]python.Range{}}
}

// find is attach.Options.InterpFind.
func (ps *pyStage) find(pid int, mem attach.Memory) { ps.reader.Find(pid, mem) }

// file is attach.Options.InterpFile.
func (ps *pyStage) file(path string) bool { return python.MayHold(path) }

// read is attach.Options.Interp.
func (ps *pyStage) read(pid, tid int, mem attach.Memory) any {
	if st := ps.reader.Read(pid, tid, mem); st != nil {
		return st
	}
	return nil
}

// walk is attach.Options.InterpWalk.
func (ps *pyStage) walk(pid, tid int) (attach.InterpWalk, bool) {
	w, ok := ps.reader.Walk(pid, tid)
	return attach.InterpWalk(w), ok
}

// inEval reports whether the frame at addr (a return address unless
// leaf) is in the eval function.
func inEval(eval []python.Range, addr uint64, leaf bool) bool {
	if !leaf {
		addr--
	}
	for _, r := range eval {
		if addr >= r.Start && addr < r.End {
			return true
		}
	}
	return false
}

// merge returns frames (leaf first) with the eval function's frames
// replaced by st's Python frames, or frames as they were when st does
// not fit them. out is scratch.
//
// A native stack that ends in memory no file holds (a JIT's code: the
// trampolines of -X perf, which no unwinder gets past) has fewer eval
// frames than the Python stack has calls; then the native stack is cut
// after that frame, the innermost calls go where the native eval frames
// are, and the others follow, outermost last. fileBacked says whether an
// address is in a file's mapping.
func (ps *pyStage) merge(s *event.Sample, frames, out []profile.Frame, fileBacked func(uint64) bool) ([]profile.Frame, []profile.Frame, bool) {
	st, _ := s.Interp.(*python.Stack)
	eval := ps.eval[s.Pid]
	if st != nil {
		eval = st.Eval
		ps.eval[s.Pid] = eval
	}
	if eval == nil {
		return frames, out, false
	}
	n := 0
	for i, f := range frames {
		if f.Label == "" && f.Category == profile.CategoryUser && inEval(eval, f.Address, i == 0) {
			n++
		}
	}
	if n == 0 {
		return frames, out, false
	}
	ps.samples++
	if st == nil && s.InterpLate {
		// Too late to read (see attach/perf), or not readable.
		ps.stale++
	}
	if st == nil || len(st.Groups) < n {
		ps.unread++
		return frames, out, false
	}
	if len(st.Groups) > n {
		// Cut after the first frame in memory no file holds; what
		// follows it (perf's frame-pointer chain past the JIT code) is
		// not to be trusted.
		cut := -1
		for i, f := range frames {
			if f.Label == "" && f.Category == profile.CategoryUser && fileBacked != nil && !fileBacked(f.Address) {
				cut = i + 1
				break
			}
		}
		if cut < 0 {
			ps.unread++
			return frames, out, false
		}
		frames = frames[:cut]
	}
	if s.InterpLate {
		ps.regs = ps.regs[:0]
		if r := s.Regs; r != nil {
			ps.regs = append(ps.regs, r.IP, r.SP, r.FP, r.BX, r.LR)
		}
		ps.regs = append(ps.regs, s.CalleeRegs...)
		if !st.Seen(ps.regs, s.StackCopy) {
			ps.stale++
			return frames, out, false
		}
	}
	out = out[:0]
	g, next := 0, 0
	for i, f := range frames {
		if f.Label != "" || f.Category != profile.CategoryUser || !inEval(eval, f.Address, i == 0) {
			out = append(out, f)
			continue
		}
		k := st.Groups[g]
		g++
		if k == 0 {
			out = append(out, f)
			continue
		}
		for _, pf := range st.Frames[next : next+k] {
			out = append(out, profile.Frame{Label: pf.Code.Name, File: pf.Code.File, Line: pf.Line,
				FuncLine: pf.Code.FirstLine, Category: profile.CategoryPython})
		}
		next += k
	}
	// The calls the native stack did not reach (see above).
	for _, pf := range st.Frames[next:] {
		out = append(out, profile.Frame{Label: pf.Code.Name, File: pf.Code.File, Line: pf.Line,
			FuncLine: pf.Code.FirstLine, Category: profile.CategoryPython})
	}
	ps.merged++
	return out, frames, true
}

// pythonShortfall says how many Python stacks read after their samples
// (perf) were not the samples', and what reads each at its sample.
func pythonShortfall(ps *pyStage, backend string) string {
	msg := fmt.Sprintf("%d of %d samples running Python (%.1f%%) kept the interpreter's native frames: the Python stack read just after the sample was no longer the sample's",
		ps.stale, ps.samples, 100*float64(ps.stale)/float64(ps.samples))
	if backend == string(attach.Perf) {
		msg += "; --backend ptrace reads each one while the thread is stopped at its sample"
	}
	return msg
}
