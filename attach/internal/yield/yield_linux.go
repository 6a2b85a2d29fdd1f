//go:build linux

package yield

import (
	"os"
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
)

// sweepEvery is how often threads started during a recording are looked
// for: Go starts some from real-time threads, whose children the kernel
// gives the normal policy (SCHED_RESET_ON_FORK), not the batch one.
const sweepEvery = 20 * time.Millisecond

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
		move(unix.SCHED_NORMAL, unix.SCHED_BATCH)
		active = true
		stop = make(chan struct{})
		go sweep(stop)
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

func sweep(stop chan struct{}) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		mu.Lock()
		if active {
			move(unix.SCHED_NORMAL, unix.SCHED_BATCH)
		}
		mu.Unlock()
	}
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
	if active {
		set(0, unix.SCHED_BATCH, unix.SCHED_NORMAL)
	}
	mu.Unlock()
	return func() {
		mu.Lock()
		delete(exempt, tid)
		mu.Unlock()
	}
}

// move sets every thread of gprof's under policy from, but the exempt
// ones, to policy to. Called with mu held.
func move(from, to uint32) {
	d, err := os.Open("/proc/self/task")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, name := range names {
		if tid, err := strconv.Atoi(name); err == nil && !exempt[tid] {
			set(tid, from, to)
		}
	}
}

// set moves thread tid (0: the caller) from policy from to policy to,
// with the same nice value, if it is under from.
func set(tid int, from, to uint32) bool {
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil || attr.Policy != from {
		return false
	}
	return unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: to, Nice: attr.Nice}, 0) == nil
}
