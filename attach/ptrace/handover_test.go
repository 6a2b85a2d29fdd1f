//go:build linux

package ptrace

import (
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/event"
)

// TestHandOverWakes: a stopper that lets a thread go to another CPU hands
// it to that CPU's stopper, which wakes from its sleep at once (not at its
// own next tick, up to 1.5 intervals on) and ticks next when the thread
// falls due, without a look before: the thread's samples land just past
// their due points however soon those come (see handOverMoved).
func TestHandOverWakes(t *testing.T) {
	s := &ptSampler{interval: time.Millisecond, timedWaits: true}
	from, to, slept := sleepingOwner(t, s)

	// A thread sampled and let go, started again on the other CPU.
	th := &shared{pid: 1, tid: 1, statFD: -1, schedFD: -1, moveTo: 2,
		statPath: []byte("/nonexistent/stat\x00"), schedPath: []byte("/nonexistent/schedstat\x00")}
	due := time.Now().Add(700 * time.Microsecond)
	th.dueAt = due
	from.mine = []*shared{th}
	from.handOverMoved()
	if len(from.mine) != 0 {
		t.Fatalf("the worker that let it go kept it")
	}
	wokenEarly(t, slept)
	if to.stats.woken != 1 {
		t.Errorf("woken counted %d, want 1", to.stats.woken)
	}

	// Its tick: the thread comes from the inbox, and the next tick is at
	// its due point. Its /proc files are not there to read: a look would
	// have found nothing and foreseen nothing.
	to.wokeAt, to.woke = time.Now(), 0
	to.mine = to.inbox.take(to.mine)
	if len(to.mine) != 1 || to.mine[0] != th {
		t.Fatalf("the new owner's inbox held %d threads, want the one handed over", len(to.mine))
	}
	if keep := to.look(th); !keep {
		t.Fatal("the new owner handed the thread on")
	}
	if !to.soonest.Equal(due) {
		t.Errorf("the new owner's next tick is at %v, want the thread's due point %v", to.soonest, due)
	}
	if !th.dueAt.IsZero() {
		t.Error("the due point stayed with the thread: its next look would skip again")
	}
}

// TestLookHandsOverWoken: a thread that a stopper's look finds on another
// CPU (let go onto one CPU and pulled back at once to the one it came
// from, as a busy thread alone on two CPUs often is) goes to that CPU's
// stopper, which wakes at once to look at it, rather than at its own next
// tick, up to 1.5 intervals on (see look). A real thread of this
// process, busy, stands for it; every CPU is the other stopper's.
func TestLookHandsOverWoken(t *testing.T) {
	s := &ptSampler{interval: time.Millisecond, timedWaits: true}
	s.byCPU = make([]int, runtime.NumCPU())
	for i := range s.byCPU {
		s.byCPU[i] = 1
	}
	var done atomic.Bool
	defer done.Store(true)
	busy := make(chan int)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		busy <- unix.Gettid()
		for !done.Load() {
		}
	}()
	tid := <-busy
	from, to, slept := sleepingOwner(t, s) // the busy thread runs meanwhile

	th := newShared(newSharedProc(os.Getpid(), false), tid, ptSched{})
	defer th.closeFiles()
	sched, ok := th.readSchedstat(from.buf)
	if !ok {
		t.Fatalf("no schedstat for thread %d", tid)
	}
	// Found runnable at its last look, just now: this look reads its
	// state and CPU even if its clock has not moved since.
	th.lastRun, th.queued = sched.run, true
	from.wokeAt, from.woke = time.Now(), event.Now()
	if keep := from.look(th); keep {
		t.Fatal("the stopper kept a thread running on another stopper's CPU")
	}
	wokenEarly(t, slept)
	if !th.dueAt.IsZero() {
		t.Errorf("handed over with a due point %v after the look, want none: the new owner looks at once", th.dueAt.Sub(from.wokeAt))
	}
	to.mine = to.inbox.take(to.mine)
	if len(to.mine) != 1 || to.mine[0] != th {
		t.Fatalf("the new owner's inbox held %d threads, want the one handed over", len(to.mine))
	}
}

// handOverFar is how long the new owner would sleep unwoken.
const handOverFar = 2 * time.Second

// sleepingOwner gives s two stoppers: the second asleep on a thread of its
// own until its next tick, handOverFar off, as a stopper whose CPU has
// nothing to sample is. slept says how long that sleep lasted.
func sleepingOwner(t *testing.T, s *ptSampler) (from, to *worker, slept <-chan time.Duration) {
	t.Helper()
	restore, ok := interruptibleWaits()
	if !ok {
		t.Fatalf("signal %d has no Go handler to make interruptible", waitSignal)
	}
	t.Cleanup(restore)
	stop := new(atomic.Bool)
	from, to = newWorker(s, 0, -1, stop), newWorker(s, 1, -1, stop)
	s.workers = []*worker{from, to}
	ch := make(chan time.Duration, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		to.tid.Store(int32(unix.Gettid()))
		defer to.tid.Store(0)
		t0 := time.Now()
		to.sleepUntil(t0.Add(handOverFar))
		ch <- time.Since(t0)
	}()
	for to.tid.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // in its sleep
	return from, to, ch
}

// wokenEarly fails t unless the sleep of sleepingOwner's stopper ended
// well before its tick.
func wokenEarly(t *testing.T, slept <-chan time.Duration) {
	t.Helper()
	select {
	case d := <-slept:
		if d > handOverFar/2 {
			t.Fatalf("the new owner slept %v, its whole sleep: not woken for the thread", d)
		}
	case <-time.After(handOverFar + time.Second):
		t.Fatal("the new owner's sleep never ended")
	}
}
