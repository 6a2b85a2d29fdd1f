package record

import (
	"strings"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/symbolize/jitdump"
	"github.com/gprof-dev/gprof/unwind"
)

// userUnwinder unwinds user stacks from the registers and stack copies a
// backend delivers, using each process's mappings.
type userUnwinder struct {
	u      *unwind.Unwinder
	spaces map[*proc]*space
	// jit returns the jitdump of a process, or nil: its code's unwind
	// information.
	jit func(pid int) *jitdump.File
	// copySize is the longest stack copy seen: the size asked for, in
	// practice. stacks counts the samples unwound from a copy; cutShort
	// those whose copy was that long and ended before the stack did.
	copySize         int
	stacks, cutShort int
}

// space is a process's address space as the unwinder sees it, kept in step
// with the builder's mapping list.
type space struct {
	as    unwind.AddressSpace
	gen   int // proc.mapGen when last synced
	added int // how many of proc.mappings are in as
	// jitAdded is how many of the process's jitdump code entries are.
	jitAdded int
}

func newUserUnwinder() *userUnwinder {
	return &userUnwinder{u: unwind.New(), spaces: make(map[*proc]*space)}
}

func (uw *userUnwinder) close() { uw.u.Close() }

// preload reads the unwind tables of the file m maps, as the first unwind
// of its samples would.
func (uw *userUnwinder) preload(m *event.Map) {
	uw.u.Preload(unwind.Mapping{Path: unwindPath(m), Dev: m.Dev, Inode: m.Inode})
}

func (uw *userUnwinder) sync(pr *proc) *space {
	sp := uw.spaces[pr]
	if sp == nil || sp.gen != pr.mapGen {
		sp = &space{gen: pr.mapGen}
		uw.spaces[pr] = sp
	}
	sp.catchUp(pr)
	if uw.jit != nil {
		sp.addJIT(uw.jit(pr.p.Pid))
	}
	return sp
}

// catchUp adds (or, for unmaps, removes) the mappings of pr not yet in sp.
func (sp *space) catchUp(pr *proc) {
	for ; sp.added < len(pr.mappings); sp.added++ {
		m := &pr.mappings[sp.added]
		if m.unmap {
			sp.as.Remove(m.Start, m.End)
			continue
		}
		sp.as.Add(unwind.Mapping{
			Start: m.Start, End: m.End, FileOffset: m.FileOffset,
			Path: unwindPath(&m.Map), Dev: m.Dev, Inode: m.Inode,
		})
	}
}

// unwindPath picks the path that opens the mapped file: the file's own
// path normally, the map_files link when the path no longer leads to it.
func unwindPath(m *event.Map) string {
	if strings.HasSuffix(m.Path, " (deleted)") && m.MapFile != "" {
		return m.MapFile
	}
	if m.Inode != 0 && m.MapFile != "" && strings.HasPrefix(m.Path, "/") {
		if ino, ok := inodeOf(m.Path); ok && ino != m.Inode {
			return m.MapFile
		}
	}
	return m.Path
}

// unwind appends the user frames of s to out. When the stack copy runs out
// before the outermost frame, the kernel's frame-pointer chain (if the
// backend sent one) continues from the last frame both agree on.
func (uw *userUnwinder) unwind(pr *proc, s *event.Sample, out []uint64) []uint64 {
	sp := uw.sync(pr)
	n := len(out)
	out, short := uw.u.UnwindCopy(&sp.as, unwind.Regs(*s.Regs), s.StackCopy, out)
	fpChain := s.Stack[s.KernelFrames:]
	if len(out) > n && len(fpChain) > 1 {
		last := out[len(out)-1]
		for j := 1; j < len(fpChain)-1; j++ {
			if fpChain[j] == last {
				out = append(out, fpChain[j+1:]...)
				// The chain went on to the end: the copy's end cost
				// nothing.
				short = false
				break
			}
		}
	}
	// A copy shorter than the others reached the top of its stack, so
	// what it lacks was not there to copy. A stack counts as cut short
	// only when nothing continued it past the copy's end.
	uw.stacks++
	if len(s.StackCopy) > uw.copySize {
		uw.copySize, uw.cutShort = len(s.StackCopy), 0
	}
	if short && len(s.StackCopy) == uw.copySize {
		uw.cutShort++
	}
	if len(out) == n {
		// Nothing unwound (no registers usable): keep the kernel's chain.
		out = append(out, fpChain...)
	}
	return out
}
