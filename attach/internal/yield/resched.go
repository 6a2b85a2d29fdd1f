package yield

import (
	"runtime"
	"time"
)

// Resched lets a goroutine locked to a real-time thread go through Go's
// scheduler when it chooses, so that the runtime never preempts it at a
// moment it does not.
//
// Why: Go preempts a goroutine that has run 10 ms without passing through
// its scheduler, and to Go a sampler that sleeps in raw system calls (so
// that nothing but its own timer wakes it) never stops running: each
// stopper and pacer got SIGURG every 10-20 ms. Preempted, a goroutine
// locked to its thread waits for another of gprof's threads to run Go's
// scheduler and hand it back, and that thread, under SCHED_BATCH (Batch),
// may wait for a CPU behind the very program sampled: 30 µs as a rule,
// but 0.4 to 1 ms now and then on a quiet 2-CPU VM, and up to 3 ms beside
// two CPU-bound loops. All five gaps of more than two intervals between
// a busy thread's samples in 150 traced runs of a 64 ms program under
// ptrace, beside two such loops, began with such a hand-back. Gone
// through the scheduler more often than every 10 ms, a goroutine is not
// preempted for running too long, and it picks a moment when a late
// hand-back costs nothing: a perf pacer right after setting a period
// that runs for several intervals, the perf reader right after reading
// its rings. (ptrace's stoppers do not pass: tried at two kinds of
// moment, passing put testdata/lockstep.c's shares off now and then, or
// made more samples late than Go's own preemption did; docs/recording.md.)
type Resched struct {
	last time.Time
	// Count counts the passes.
	Count int
}

// ReschedAfter is how long after its last pass a goroutine passes again,
// at the next moment that suits it. Go preempts after 10 ms, counted
// from when its monitor, which looks every 20 µs to 10 ms, first saw the
// goroutine run: a pacer at 1 kHz sets a period every 1.6 to 6.4 ms, so
// it passes within 10.4 ms of the last pass, and in 200 ms of raw sleeps
// of 0.5 ms a goroutine got no SIGURG (TestReschedKeepsPreemptionAway).
const ReschedAfter = 4 * time.Millisecond

// Due says a pass is due.
func (r *Resched) Due() bool { return time.Since(r.last) >= ReschedAfter }

// Pass goes through the scheduler.
func (r *Resched) Pass() {
	runtime.Gosched()
	r.last = time.Now()
	r.Count++
}
