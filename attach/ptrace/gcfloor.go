//go:build linux

package ptrace

import "runtime"

// gcBallast is how much more heap the Go garbage collector lets gprof
// allocate before it collects, while a recording runs (holdGCAway).
const gcBallast = 64 << 20

// holdGCAway makes the garbage collector run rarely while a ptrace
// recording runs, and returns what ends that. It allocates gcBallast bytes that are
// never touched: the collector's goal is twice the live heap, so it then
// waits for 64 MB more garbage, not the few megabytes gprof starts with,
// while the ballast costs no memory (fresh pages the kernel maps only
// once written) and no marking (it holds no pointers).
//
// Why: a collection takes CPU on every CPU at once (its idle workers
// take every idle P, and gprof runs more Ps than CPUs for its stoppers)
// and briefly stops every goroutine. Beside a short program on a 2-CPU
// machine, the few collections of gprof's start-up took the program's
// CPU and held the stoppers up: its samples came up to 6.5 ms of its CPU
// time apart (2 ms with the collector off), and up to 8.6 ms of wall
// time. Only here: with it, the perf backend's recording of a process
// that starts and ends threads all the time (attach/perf's
// TestAttachThreadChurn) lost most of its samples, for a reason not
// found yet.
func holdGCAway() (release func()) {
	b := make([]byte, gcBallast)
	return func() { runtime.KeepAlive(b) }
}
