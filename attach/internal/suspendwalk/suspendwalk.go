// Package suspendwalk holds what the samplers that suspend a thread to
// copy its stack, then walk the copy, share (attach/mach on macOS,
// attach/suspend on Windows): the lock held while a target thread is
// suspended (Settle), the frame-pointer walk (WalkFP), and the helpers
// that keep their threads in a map and report them (their starts, names
// and exits) in thread id order, so that events, and the profiles built
// from them, do not depend on map order.
package suspendwalk

import (
	"errors"
	"slices"
	"sync"

	"github.com/gprof-dev/gprof/event"
)

// ByTid returns the threads of m ordered by thread id.
func ByTid[K comparable, T any](m map[K]*T, tid func(*T) int) []*T {
	ths := make([]*T, 0, len(m))
	for _, th := range m {
		ths = append(ths, th)
	}
	slices.SortFunc(ths, func(a, b *T) int { return tid(a) - tid(b) })
	return ths
}

// EmitNewThread reports a thread that a thread list found for the first
// time: its creation by the process (a Fork), unless it was there when
// sampling began (initial), then its name. The main thread's (tid == pid)
// name comes with the process's command line, argv, and whether gprof
// exec'd the process (execd).
func EmitNewThread(emit func(event.Event), now int64, pid, tid int, name string, initial bool, argv []string, execd bool) {
	if !initial {
		emit(&event.Fork{Time: now, Pid: pid, Tid: tid, Ppid: pid, Ptid: pid})
	}
	c := &event.Comm{Time: now, Pid: pid, Tid: tid, Name: name}
	if tid == pid {
		c.Argv, c.Exec = argv, execd
	}
	emit(c)
}

// EmitGone reports the exit of every thread in tids but the main one, then
// of the process (its main thread, whose tid is pid).
func EmitGone(emit func(event.Event), now int64, pid int, tids []int) {
	for _, tid := range tids {
		if tid != pid {
			emit(&event.Exit{Time: now, Pid: pid, Tid: tid})
		}
	}
	emit(&event.Exit{Time: now, Pid: pid, Tid: pid})
}

// ErrTaskGone says the task no longer exists (it exited or exec'd).
var ErrTaskGone = errors.New("task is gone")

// Mu is held while a thread of a target is suspended. A thread
// suspended with thread_suspend stays suspended if gprof dies before
// resuming it (Mach has no suspension token for threads), so an exit
// path of gprof's own calls attach.Settle, and so Settle, first.
var Mu sync.Mutex

// Settle waits until no target thread is suspended by gprof and
// keeps it so: call it before exiting the process abruptly (os.Exit)
// while a recording may still run. It never returns the lock.
func Settle() { Mu.Lock() }

// StackPage is the granularity of a partial stack read: 4 KiB, which
// divides both macOS page sizes (4 KiB on x86_64, 16 KiB on arm64).
const StackPage = 4096
