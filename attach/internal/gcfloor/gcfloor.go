// Package gcfloor keeps the Go garbage collector away while gprof records.
//
// A collection takes CPU on every CPU at once (its idle mark workers take
// every idle P, and gprof runs more Ps than CPUs for its pacers and
// stoppers) and briefly stops every goroutine. Beside a short program on
// a 2-CPU machine, the few collections of gprof's start-up took the
// program's CPU and held the samplers up: a 64 ms program launched under
// the perf backend ran 74 ms instead of 64 and got its samples up to 4-5
// ms of wall time apart (67-69 ms and 2-3 ms with the collector held
// away); under ptrace its samples came up to 6.5 ms of its CPU time
// apart (2.2 ms held away).
package gcfloor

import (
	"runtime"
	"sync"
)

// Size is how much more heap the collector lets gprof allocate before it
// collects, while a recording holds it away.
const Size = 64 << 20

var (
	mu   sync.Mutex
	used bool
)

// Hold holds the collector away until the function it returns is called.
// It allocates Size bytes that are never written: the collector's goal is
// twice the live heap, so it then waits for Size more garbage, not for
// the few megabytes gprof starts with, while the ballast costs no memory
// (fresh pages, which the kernel maps only once written) and no marking
// (it holds no pointers).
//
// Only the first call in a process holds anything; later ones return at
// once. A second ballast would reuse the first one's freed pages, which
// the runtime must zero: 64 MB written, and in a test binary that records
// again and again the runtime stalled for seconds while a collection
// waited on that zeroing goroutine (attach/perf's TestAttachThreadChurn
// lost most of its samples). gprof records once per process.
func Hold() (release func()) {
	mu.Lock()
	defer mu.Unlock()
	if used {
		return func() {}
	}
	used = true
	b := make([]byte, Size)
	// The allocation itself starts a collection (the heap just passed
	// the few megabytes of its first goal, gctrace: at 5 ms): it ends
	// here, before the samplers start, rather than beside them, where it
	// would take their goroutines off their threads (to scan their
	// stacks, or to stop the world), each then waiting for another of
	// gprof's threads to hand it back.
	runtime.GC()
	return func() { runtime.KeepAlive(b) }
}
