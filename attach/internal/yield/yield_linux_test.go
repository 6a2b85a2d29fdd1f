//go:build linux

package yield

import (
	"os/exec"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func policy(t *testing.T, tid int) uint32 {
	t.Helper()
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		t.Fatalf("sched_getattr(%d): %v", tid, err)
	}
	return a.Policy
}

// onThread runs f on a thread of its own (locked) and returns what it
// returned.
func onThread(f func() uint32) uint32 {
	ch := make(chan uint32)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ch <- f()
	}()
	return <-ch
}

// normalThread locks the test to its thread and returns that thread's
// scheduling attributes, skipping the test where it runs under another
// policy than the normal one (the tests start from gprof's usual case).
func normalThread(t *testing.T) *unix.SchedAttr {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	old, err := unix.SchedGetAttr(0, 0)
	if err != nil || old.Policy != unix.SCHED_NORMAL {
		t.Skip("the test runs under another policy than the normal one")
	}
	return old
}

func TestBatchExemptRestore(t *testing.T) {
	normalThread(t)
	restore := Batch()
	restored := false
	defer func() {
		if !restored {
			restore()
		}
	}()
	if p := policy(t, 0); p != unix.SCHED_BATCH {
		t.Errorf("a thread of gprof's under policy %d while batched, want SCHED_BATCH", p)
	}
	// Every thread, whether it was there or started since, is batched
	// by the next sweep.
	if p := onThread(func() uint32 { time.Sleep(3 * sweepEvery); return policy(t, 0) }); p != unix.SCHED_BATCH {
		t.Errorf("another thread under policy %d after a sweep, want SCHED_BATCH", p)
	}
	// An exempt thread is moved back and left alone.
	if p := onThread(func() uint32 {
		done := Exempt()
		defer done()
		time.Sleep(3 * sweepEvery)
		return policy(t, 0)
	}); p != unix.SCHED_NORMAL {
		t.Errorf("an exempt thread under policy %d, want SCHED_NORMAL", p)
	}
	// A thread whose exemption ended is batched again, though a sweep
	// had found it batched before (sweeps skip the threads they know).
	if p := onThread(func() uint32 {
		time.Sleep(3 * sweepEvery)
		Exempt()()
		time.Sleep(3 * sweepEvery)
		return policy(t, 0)
	}); p != unix.SCHED_BATCH {
		t.Errorf("a thread no longer exempt under policy %d after a sweep, want SCHED_BATCH", p)
	}
	// A process forked by an exempt thread runs under the normal policy.
	if p := onThread(func() uint32 {
		done := Exempt()
		defer done()
		cmd := exec.Command("sleep", "10")
		if err := cmd.Start(); err != nil {
			t.Errorf("start sleep: %v", err)
			return unix.SCHED_NORMAL
		}
		defer cmd.Wait()
		defer cmd.Process.Kill()
		return policy(t, cmd.Process.Pid)
	}); p != unix.SCHED_NORMAL {
		t.Errorf("a command forked by an exempt thread under policy %d, want SCHED_NORMAL", p)
	}
	restore()
	restored = true
	if p := policy(t, 0); p != unix.SCHED_NORMAL {
		t.Errorf("a thread under policy %d after the recording, want SCHED_NORMAL", p)
	}
}

// A second recording at the same time keeps the threads batched until
// both have ended.
func TestBatchNested(t *testing.T) {
	normalThread(t)
	first, second := Batch(), Batch()
	first()
	if p := policy(t, 0); p != unix.SCHED_BATCH {
		t.Errorf("policy %d with one recording still running, want SCHED_BATCH", p)
	}
	second()
	if p := policy(t, 0); p != unix.SCHED_NORMAL {
		t.Errorf("policy %d after both, want SCHED_NORMAL", p)
	}
}

// gprof started under another policy than the normal one keeps it, and
// so do the commands it launches.
func TestBatchLeavesOtherPolicies(t *testing.T) {
	old := normalThread(t)
	// gprof run as chrt -b would run it: its threads, and so the
	// launched command, under SCHED_BATCH already.
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_BATCH, Nice: old.Nice}, 0); err != nil {
		t.Skipf("SCHED_BATCH refused: %v", err)
	}
	defer unix.SchedSetAttr(0, old, 0)
	restore := Batch()
	done := Exempt()
	if p := policy(t, 0); p != unix.SCHED_BATCH {
		t.Errorf("policy %d for a thread that forks while recording, want SCHED_BATCH (gprof's own)", p)
	}
	done()
	restore()
	if p := policy(t, 0); p != unix.SCHED_BATCH {
		t.Errorf("policy %d after recording, want SCHED_BATCH", p)
	}
}

// Ahead gives the thread what the process may have, in order (fifo where
// it may, else nice -20 with the short slice...), says which, exempts the
// thread from a batching recording, and undoes it all.
func TestAhead(t *testing.T) {
	old := normalThread(t)
	// Where gprof may be real-time, it is.
	mayFIFO := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1}, 0) == nil
	unix.SchedSetAttr(0, old, 0)
	restoreBatch := Batch()
	batched := true
	defer func() {
		if batched {
			restoreBatch()
		}
	}()
	restore, got := Ahead(1)
	a, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]func() bool{
		"fifo":       func() bool { return a.Policy == unix.SCHED_FIFO && a.Priority == 1 },
		"nice+slice": func() bool { return a.Policy == unix.SCHED_NORMAL && a.Nice == -20 },
		"nice":       func() bool { return a.Policy == unix.SCHED_NORMAL && a.Nice == -20 },
		"slice":      func() bool { return a.Policy == unix.SCHED_NORMAL },
		"none":       func() bool { return a.Policy == unix.SCHED_NORMAL },
	}
	if check, ok := want[got]; !ok || !check() {
		t.Errorf("Ahead said %q, and the thread is under policy %d, priority %d, nice %d", got, a.Policy, a.Priority, a.Nice)
	}
	if mayFIFO && got != "fifo" {
		t.Errorf("Ahead said %q where SCHED_FIFO is allowed", got)
	}
	// A sweep leaves it alone.
	time.Sleep(3 * sweepEvery)
	if p := policy(t, 0); p == unix.SCHED_BATCH {
		t.Errorf("a thread put ahead was batched by a sweep")
	}
	// Undone while the recording runs, it is batched again at once;
	// after, back where it was.
	restore()
	if a, _ := unix.SchedGetAttr(0, 0); a.Policy != unix.SCHED_BATCH || a.Nice != old.Nice {
		t.Errorf("after restore: policy %d, nice %d, want SCHED_BATCH, %d", a.Policy, a.Nice, old.Nice)
	}
	restoreBatch()
	batched = false
	if a, _ := unix.SchedGetAttr(0, 0); a.Policy != old.Policy || a.Nice != old.Nice {
		t.Errorf("after the recording: policy %d, nice %d, want %d, %d", a.Policy, a.Nice, old.Policy, old.Nice)
	}
}
