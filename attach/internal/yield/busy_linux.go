//go:build linux

package yield

import "golang.org/x/sys/unix"

// Busy follows which CPUs a recording's targets run on, from the CPUs
// of their samples, for Aside: the scheduler wakes a thread where it, or
// the thread that wakes it, last ran, and on some machines looks no
// further for an idle CPU. One goroutine calls both Note and SetAside
// (the perf reader).
type Busy struct {
	// last is when a target was last sampled on each CPU (ns, any
	// clock).
	last [maxCPUs]int64
	set  []int
}

// maxCPUs is as many CPUs as a unix.CPUSet holds.
const maxCPUs = 1024

// busyWindow is how recently a target must have been sampled on a CPU
// for it to count as busy: a busy thread is sampled every interval, and
// a CPU it left is free again after this.
const busyWindow = 20e6 // ns

// Note notes a target's sample on cpu at t.
func (b *Busy) Note(cpu int, t int64) {
	if b == nil || cpu < 0 || cpu >= len(b.last) {
		return
	}
	b.last[cpu] = max(b.last[cpu], t)
}

// SetAside keeps gprof's batched threads off the CPUs the targets were
// sampled on in the busyWindow before now (Aside), or nowhere where
// gprof falls behind its targets (behind: it needs every CPU then). It
// returns Aside's answer, for a thread that places itself.
func (b *Busy) SetAside(now int64, behind bool) (keep unix.CPUSet, changed bool) {
	set := b.set[:0]
	if !behind {
		for cpu, t := range &b.last {
			if t != 0 && now-t < busyWindow {
				set = append(set, cpu)
			}
		}
	}
	b.set = set
	return Aside(set)
}
