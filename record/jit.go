package record

import (
	"os"
	"strings"

	"github.com/gprof-dev/gprof/symbolize/jitdump"
	"github.com/gprof-dev/gprof/unwind"
)

// jitDump is the jitdump file of one process, followed as it grows. A
// runtime that writes one (CPython -X perf_jit, node --perf-prof) maps it
// executable so that profilers find it among its mappings, as perf does.
type jitDump struct {
	path string
	f    *jitdump.File
	size int64
	err  error
}

// isJITDump reports whether a mapping is a runtime's jitdump file rather
// than code.
func isJITDump(path string) bool {
	_, ok := jitdump.PidOfPath(strings.TrimSuffix(path, " (deleted)"))
	return ok
}

// noteJITDump remembers the jitdump file process pid mapped, and reads
// what it holds so far.
func (r *libResolver) noteJITDump(pid int, path string) {
	path = strings.TrimSuffix(path, " (deleted)")
	if d := r.jitDumps[pid]; d != nil && d.path == path {
		return
	}
	r.jitDumps[pid] = &jitDump{path: path}
	r.refreshJITDump(pid)
}

// refreshJITDump reads the records appended to pid's jitdump since it was
// last read. Runtimes buffer their writes (CPython flushes its dump when
// it exits), so the code a sample ran may only show up later.
func (r *libResolver) refreshJITDump(pid int) {
	d := r.jitDumps[pid]
	if d == nil {
		return
	}
	st, err := os.Stat(d.path)
	if err != nil || st.Size() == d.size {
		return
	}
	data, err := os.ReadFile(d.path)
	if err != nil {
		return
	}
	d.size = int64(len(data))
	if d.f == nil {
		d.f, d.err = jitdump.Parse(data)
		return
	}
	if err := d.f.Continue(data); err != nil {
		d.err = err
	}
}

// jitDumpOf returns what pid's jitdump held when last read, or nil.
func (r *libResolver) jitDumpOf(pid int) *jitdump.File {
	if d := r.jitDumps[pid]; d != nil {
		return d.f
	}
	return nil
}

// addJIT adds the JIT code of f that sp does not have yet, with its
// unwind information, to the unwinder's view of the process.
func (sp *space) addJIT(f *jitdump.File) {
	if f == nil {
		return
	}
	for ; sp.jitAdded < len(f.Code); sp.jitAdded++ {
		c := &f.Code[sp.jitAdded]
		if c.EHFrame == nil {
			continue
		}
		sp.as.AddJIT(unwind.JITCode{Start: c.Addr, End: c.Addr + c.Size, EHFrame: c.EHFrame, EHFrameAt: c.EHFrameAt})
	}
}
