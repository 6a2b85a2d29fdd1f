//go:build linux

package yield

import (
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A goroutine locked to its thread that sleeps in raw system calls, as the
// samplers do, looks to Go as if it never stopped running, and Go
// preempts it with SIGURG every 10-20 ms; passing through the scheduler
// when Resched says it is due, it is never preempted.
func TestReschedKeepsPreemptionAway(t *testing.T) {
	urg := make(chan os.Signal, 1000)
	signal.Notify(urg, unix.SIGURG)
	defer signal.Stop(urg)
	// A collection signals running goroutines too (to scan their stacks).
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))

	run := func(pass bool) (signals, passes int) {
		for len(urg) > 0 {
			<-urg
		}
		done := make(chan int)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var r Resched
			ts := unix.NsecToTimespec(int64(500 * time.Microsecond))
			for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
				unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
				if pass && r.Due() {
					r.Pass()
				}
			}
			done <- r.Count
		}()
		passes = <-done
		time.Sleep(10 * time.Millisecond) // for the last signals to arrive
		return len(urg), passes
	}
	without, _ := run(false)
	with, passes := run(true)
	t.Logf("SIGURG in 200 ms: %d without passes, %d with %d passes", without, with, passes)
	if without == 0 {
		t.Fatalf("Go never preempted a goroutine that slept in raw system calls for 200 ms: Resched's premise no longer holds")
	}
	if with != 0 {
		t.Errorf("%d SIGURG with passes every %v, want none", with, ReschedAfter)
	}
	if want := int(200*time.Millisecond/ReschedAfter) / 2; passes < want {
		t.Errorf("%d passes in 200 ms, want at least %d", passes, want)
	}
}
