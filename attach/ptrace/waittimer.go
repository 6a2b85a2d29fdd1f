//go:build linux

package ptrace

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A stopper waits for a stop in wait4, which has no timeout of its own:
// a POSIX timer of the stopper's, which signals the stopper's thread
// alone (SIGEV_THREAD_ID), ends the wait instead. The Go runtime handles
// waitSignal on every thread and ignores it (no os/signal asks for it),
// but installs its handler with SA_RESTART, which would have the kernel
// restart the wait: interruptibleWaits clears that flag while the
// sampler runs, so that the signal ends the system call it arrives in.

// waitSignal is a real-time signal the Go runtime leaves alone unless
// os/signal asks for it (and the C library uses none above 34).
const waitSignal = unix.Signal(44)

const (
	saRestart     = 0x10000000 // SA_RESTART
	sigevThreadID = 4          // SIGEV_THREAD_ID
)

// interruptibleWaits makes waitSignal end the system call it arrives in.
// It reports false, changing nothing, where the signal is not the Go
// runtime's to ignore (its default action ends the process; ignored, it
// interrupts nothing). It returns what undoes it.
func interruptibleWaits() (restore func(), ok bool) {
	old, ok := getSigaction(waitSignal)
	if !ok || old.handler == 0 || old.handler == 1 { // SIG_DFL, SIG_IGN
		return func() {}, false
	}
	sa := old
	sa.flags &^= saRestart
	if !setSigaction(waitSignal, sa) {
		return func() {}, false
	}
	return func() { setSigaction(waitSignal, old) }, true
}

// waitTimer is a timer that sends waitSignal to the thread that made it.
type waitTimer struct{ id int32 }

// sigevent is the kernel's struct sigevent for SIGEV_THREAD_ID, padded to
// the kernel's 64 bytes.
type sigevent struct {
	value         uintptr
	signo, notify int32
	tid           int32
	_             [48]byte
}

// newWaitTimer makes a timer for the calling thread, which must stay
// locked to its goroutine while the timer is used.
func newWaitTimer() (*waitTimer, error) {
	ev := sigevent{signo: int32(waitSignal), notify: sigevThreadID, tid: int32(unix.Gettid())}
	var id int32
	_, _, e := unix.RawSyscall(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&ev)), uintptr(unsafe.Pointer(&id)))
	if e != 0 {
		return nil, e
	}
	return &waitTimer{id: id}, nil
}

// set arms the timer to fire once, d from now, or disarms it (d 0).
func (t *waitTimer) set(d time.Duration) bool {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	_, _, e := unix.RawSyscall6(unix.SYS_TIMER_SETTIME, uintptr(t.id), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	return e == 0
}

func (t *waitTimer) close() {
	unix.RawSyscall(unix.SYS_TIMER_DELETE, uintptr(t.id), 0, 0)
}
