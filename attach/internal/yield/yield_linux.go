//go:build linux

package yield

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

var (
	mu sync.Mutex
	// holders counts the recordings running; the first moves the
	// threads, the last moves them back.
	holders int
	// active says gprof's threads are batched: a thread that forks a
	// launched command moves itself back first (Exempt).
	active bool
	// stop ends the sweeps that batch the threads started since.
	stop chan struct{}
	// exempt holds the threads that set their own policy (Exempt).
	exempt = map[int]bool{}
	// batched holds the threads seen under the batch policy since the
	// threads were moved: sweeps skip them. Asking each thread its
	// policy at every sweep (a system call a thread, 50 sweeps a
	// second) was a tenth of what gprof did on a 64 ms program's CPUs.
	batched = map[int]bool{}
)

// sweepEvery is how often threads started during a recording are looked
// for: Go starts some from real-time threads, whose children the kernel
// gives the normal policy (SCHED_RESET_ON_FORK), not the batch one. A
// sweep lists /proc/self/task, 150-250 µs of CPU time on a 2-CPU VM while
// gprof records (a tenth of what gprof did on a 64 ms program's CPUs), so
// it runs only when the Go runtime's count of its threads changed, and
// every fullSweepEvery times anyway (a thread that ends as another starts
// leaves the count as it was; C code may start threads of its own). The
// look itself wakes a thread, 30-80 µs on such a VM: 10 a second.
const (
	sweepEvery     = 100 * time.Millisecond
	fullSweepEvery = 5
)

// Batch puts every thread of gprof under the normal policy under
// SCHED_BATCH, keeping its nice value, but those Exempt; threads started
// later inherit it from the thread that starts them, or are found by a
// sweep. It returns what moves them back.
func Batch() (restore func()) {
	mu.Lock()
	defer mu.Unlock()
	holders++
	if holders == 1 && callerNormal() {
		// Only where gprof runs under the normal policy: one started
		// under another (chrt -b, -i, -f) keeps it, and so do the
		// commands it launches.
		count := goThreads()
		move(unix.SCHED_NORMAL, unix.SCHED_BATCH)
		active = true
		stop = make(chan struct{})
		go sweep(stop, count)
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		holders--
		if holders == 0 {
			if active {
				close(stop)
				active = false
				move(unix.SCHED_BATCH, unix.SCHED_NORMAL)
			}
			// A thread that ended without undoing its exemption (a
			// stopper's, left to end with what it traced) is gone.
			clear(exempt)
		}
	}
}

// callerNormal says whether the calling thread is under the normal policy.
func callerNormal() bool {
	attr, err := unix.SchedGetAttr(0, 0)
	return err == nil && attr.Policy == unix.SCHED_NORMAL
}

// sweep batches, until stop, the threads started since the runtime had
// last threads.
func sweep(stop chan struct{}, last int) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if now := goThreads(); now != last || n%fullSweepEvery == 0 {
			last = now
			mu.Lock()
			if active {
				sweepOnce()
			}
			mu.Unlock()
		}
	}
}

// goThreads counts the threads the Go runtime has (its Ms), in memory:
// no system call.
func goThreads() int {
	n, _ := runtime.ThreadCreateProfile(nil)
	return n
}

// Exempt moves the calling thread (locked to its goroutine) back to the
// normal policy if it was batched, and keeps sweeps away from it until
// done: a thread that sets its own policy (a sampler that must preempt
// its targets), or one that forks a launched command, which must run as
// it would without gprof.
func Exempt() (done func()) {
	tid := unix.Gettid()
	mu.Lock()
	exempt[tid] = true
	delete(batched, tid)
	if active {
		set(0, unix.SCHED_BATCH, unix.SCHED_NORMAL)
	}
	mu.Unlock()
	return func() {
		mu.Lock()
		delete(exempt, tid)
		// Batched again now: sweeps come only as threads start.
		if active && set(tid, unix.SCHED_NORMAL, unix.SCHED_BATCH) == unix.SCHED_BATCH {
			batched[tid] = true
		}
		mu.Unlock()
	}
}

// move sets every thread of gprof's under policy from, but the exempt
// ones, to policy to. Called with mu held.
func move(from, to uint32) {
	clear(batched)
	for _, tid := range threads() {
		if !exempt[tid] && set(tid, from, to) == unix.SCHED_BATCH {
			batched[tid] = true
		}
	}
}

// sweepOnce batches the threads under the normal policy that are neither
// exempt nor known to be batched. Called with mu held.
func sweepOnce() {
	tids := threads()
	live := make(map[int]bool, len(tids))
	for _, tid := range tids {
		live[tid] = true
		if exempt[tid] || batched[tid] {
			continue
		}
		if set(tid, unix.SCHED_NORMAL, unix.SCHED_BATCH) == unix.SCHED_BATCH {
			batched[tid] = true
		}
	}
	// A thread id the kernel may give a new thread.
	for tid := range batched {
		if !live[tid] {
			delete(batched, tid)
		}
	}
}

// threads lists gprof's threads.
func threads() []int {
	d, err := os.Open("/proc/self/task")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	tids := make([]int, 0, len(names))
	for _, name := range names {
		if tid, err := strconv.Atoi(name); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids
}

// set moves thread tid (0: the caller) from policy from to policy to,
// with the same nice value, if it is under from. It returns the thread's
// policy after, or from where it cannot tell.
func set(tid int, from, to uint32) uint32 {
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return from
	}
	if attr.Policy != from {
		return attr.Policy
	}
	if unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: to, Nice: attr.Nice}, 0) != nil {
		return from
	}
	return to
}

// Ahead puts the calling thread (locked to its goroutine) ahead of the
// threads it samples, and exempts it from batching: as a real-time thread
// (SCHED_FIFO at priority) when gprof may (CAP_SYS_NICE, or an
// RLIMIT_RTPRIO that allows it), which preempts them the moment its timer
// fires; else at nice -20 where RLIMIT_NICE allows, with the shortest time
// slice the scheduler grants (100 µs, Linux 6.12 and later), with which a
// thread that wakes preempts one with a longer slice at once; else with
// that slice alone. Nice -20 alone is not enough: root in a container
// without CAP_SYS_NICE got it, and on a 16-CPU VM ptrace's stoppers
// preempted their targets only at the scheduler's ticks, every 2.5 to 4
// ms (a 64 ms program got 0.30-0.36 of its samples at 1 kHz, two busy
// threads 0.20-0.26); with the short slice too, 1.00 and 0.999-1.001, and
// beside 16 CPU-bound loops 0.97-1.00. A thread with none of these runs
// when the scheduler's fairness lets it, often at its next tick. It
// returns what undoes all that, and says which it got: "fifo",
// "nice+slice", "nice", "slice" or "none".
func Ahead(priority int) (restore func(), got string) {
	unexempt := Exempt()
	old, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return unexempt, "none"
	}
	const resetOnFork = 1 // SCHED_FLAG_RESET_ON_FORK
	slice := uint64(100 * time.Microsecond)
	tries := []struct {
		attr unix.SchedAttr
		name string
	}{
		{unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(priority), Flags: resetOnFork}, "fifo"},
		{unix.SchedAttr{Policy: unix.SCHED_NORMAL, Nice: -20, Runtime: slice, Flags: resetOnFork}, "nice+slice"},
		{unix.SchedAttr{Policy: unix.SCHED_NORMAL, Nice: -20, Flags: resetOnFork}, "nice"},
		{unix.SchedAttr{Policy: unix.SCHED_NORMAL, Nice: old.Nice, Runtime: slice, Flags: resetOnFork}, "slice"},
	}
	for _, t := range tries {
		if unix.SchedSetAttr(0, &t.attr, 0) == nil {
			return func() {
				unix.SchedSetAttr(0, old, 0)
				unexempt()
			}, t.name
		}
	}
	return unexempt, "none"
}
