//go:build linux

package proc

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// YieldToTargets makes every thread of gprof (and so every thread they
// start later: a thread takes its policy from the one that creates it)
// SCHED_BATCH: a batch thread that wakes never preempts the thread
// running on its CPU; it waits for that thread's time slice to end, or
// for the scheduler to move it to an idle CPU. Its share of a busy CPU
// is the same as a normal thread's (SCHED_BATCH changes no weight), so
// gprof keeps up as before.
//
// Why: the targets run on the CPUs where gprof's threads wake, and a
// waking thread preempts the one running there. On a 2-CPU VM whose CPUs
// share no cache the scheduler does not look at the other CPU at all: a
// 64 ms program waited 7 to 13 ms for its CPU under gprof (the Go
// runtime's monitor thread alone woke up to every 100 µs on the target's
// CPU and preempted it each time), 0.1 ms under perf; its samples, one
// per millisecond of its CPU time, came up to 6 ms apart in wall time.
//
// The threads that must preempt their targets (ptrace's stoppers, the
// pacers, a Python-reading reader) set their own policy, and the thread
// that forks launched commands sets itself back to SCHED_OTHER
// (normalThread) before each fork, so that no command inherits the batch
// policy. Moving among the normal policies needs no privilege; where the
// kernel refuses anyway, nothing changes.
func YieldToTargets() {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil || keptTid.Load() == int64(tid) {
			continue
		}
		a, err := unix.SchedGetAttr(tid, 0)
		if err != nil || a.Policy != unix.SCHED_NORMAL {
			continue // real-time, idle or batch already: its own choice
		}
		a.Size = unix.SizeofSchedAttr
		a.Policy = unix.SCHED_BATCH
		unix.SchedSetAttr(tid, a, 0)
	}
}

// normalThread puts the calling thread back under SCHED_OTHER, at its
// nice value, if it is a batch thread (YieldToTargets).
func normalThread() {
	a, err := unix.SchedGetAttr(0, 0)
	if err != nil || a.Policy != unix.SCHED_BATCH {
		return
	}
	a.Size = unix.SizeofSchedAttr
	a.Policy = unix.SCHED_NORMAL
	unix.SchedSetAttr(0, a, 0)
}
