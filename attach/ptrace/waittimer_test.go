//go:build linux

package ptrace

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestWaitUntil checks a stopper's timed wait on a real tracee: with no
// stop asked for it ends at its timer (not sooner, not never: the Go
// runtime's handler would restart it), and it ends with a stop when one
// comes, long before its timer.
func TestWaitUntil(t *testing.T) {
	cmd := ptStartTarget(t, "sleep", "60")
	pid := cmd.Process.Pid
	ptRequire(t, pid)
	restore, ok := interruptibleWaits()
	if !ok {
		t.Fatalf("signal %d has no Go handler to make interruptible", waitSignal)
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- func() error {
			timer, err := newWaitTimer()
			if err != nil {
				return fmt.Errorf("timer_create: %v", err)
			}
			defer timer.close()
			if err := ptSeize(pid); err != nil {
				return fmt.Errorf("seize: %v", err)
			}
			const short = 20 * time.Millisecond
			t0 := time.Now()
			if r := ptWaitUntil(pid, timer, short); r.kind != stopNone {
				return fmt.Errorf("waiting for a thread asked nothing: %+v, want none", r)
			}
			if waited := time.Since(t0); waited < short {
				return fmt.Errorf("the wait ended after %v, before its timer (%v)", waited, short)
			}
			if err := ptInterrupt(pid); err != nil {
				return fmt.Errorf("interrupt: %v", err)
			}
			r := ptWaitUntil(pid, timer, time.Minute)
			if r.kind != stopped {
				return fmt.Errorf("waiting for an interrupted thread: %+v, want its stop", r)
			}
			return ptDetach(pid, r.sig)
		}()
		// Detached or never stopped: nothing of the target's stays with
		// this thread.
		runtime.UnlockOSThread()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a timed wait did not end: its timer's signal did not interrupt wait4")
	}
	restore()
	if sa, _ := getSigaction(waitSignal); sa.flags&saRestart == 0 {
		t.Errorf("signal %d is still without SA_RESTART after restore", waitSignal)
	}
}
