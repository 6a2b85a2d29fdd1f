//go:build linux

package ptrace

import (
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Thin wrappers over the ptrace requests the sampler uses. Every one of
// them, and every wait4 on a tracee, must run on the OS thread that seized
// the tracee; the sampler guarantees that by locking its goroutine.
//
// The stoppers' system calls are raw (no entersyscall: the goroutine
// keeps its P and stays running as far as Go's scheduler knows), their
// sleeps included. Since Go 1.26 the runtime's monitor thread (sysmon)
// takes the scan bit of every goroutine it finds in a system call, at
// each of its rounds, to see whether to take its P; a stopper whose timer
// fired while sysmon held its bit, on the stopper's CPU, preempted sysmon
// (a stopper is real-time) and then spun in exitsyscall waiting for the
// bit: sched_yield from a real-time thread never lets sysmon run there, so
// the CPU stayed the stopper's until the kernel moved sysmon elsewhere,
// 30 to 430 ms later, and the threads it sampled went unsampled (two busy
// threads on two CPUs: a gap of 20 ms or more in 7 runs of 40). And since
// a stopper's P looked like one held in a long system call, sysmon took
// it at every round and, having found work, polled every 20 µs: a
// wake-up every 120 µs on the targets' CPUs (47 ms of CPU in 1,577 slices
// in a 0.6 s recording). A raw sleep is seen as running Go code instead:
// sysmon asks it to yield once per 10 ms (a signal ends the sleep early;
// the loops sleep again), and polls slowly (9 ms in 351 slices).

// ptSeize starts tracing tid without stopping it. No options: the sampler
// never wants to hear about clone, exec or exit, and must never kill the
// target (PTRACE_O_EXITKILL) if gprof dies.
func ptSeize(tid int) error {
	return ptrace(unix.PTRACE_SEIZE, tid, 0, 0)
}

func ptInterrupt(tid int) error {
	return ptrace(unix.PTRACE_INTERRUPT, tid, 0, 0)
}

// ptDetach lets a stopped tracee go, delivering sig (0 for none) so that a
// signal which arrived while it was seized is not lost.
func ptDetach(tid int, sig unix.Signal) error {
	return ptrace(unix.PTRACE_DETACH, tid, 0, uintptr(sig))
}

func ptrace(req, tid int, addr, data uintptr) error {
	for {
		_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), addr, data, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// stopKind says how a seized thread ended up when the sampler waited for it.
type stopKind int

const (
	stopNone    stopKind = iota // still running
	stopped                     // in a ptrace-stop; registers can be read
	stopGone                    // exited or no longer ours to wait for
	stopBlocked                 // wait4 failed for another reason
)

// stopResult describes a stop: sig is the signal to hand back on detach,
// nonzero only for a signal-delivery-stop; status is the process's exit
// status when the thread turned out to be a process that exited.
type stopResult struct {
	kind   stopKind
	sig    unix.Signal
	status unix.WaitStatus
}

// ptPoll collects tid's state change if there is one, without blocking.
func ptPoll(tid int) stopResult {
	return ptWait(tid, unix.WNOHANG)
}

// ptWaitStop waits for tid to enter a ptrace-stop after PTRACE_INTERRUPT.
//
// It blocks in wait4, which wakes the moment the tracee stops: polling
// instead, whether with sleeps or on SIGCHLD, measured 10 to 100 times
// slower per stop on a loaded machine, because the Go scheduler must bring
// the sampler back each time. The price is that a thread which went from
// running into a long uninterruptible sleep holds the sampler until it
// wakes; recordPtrace then stops waiting for the sampler (see abandon).
func ptWaitStop(tid int) stopResult {
	return ptWait(tid, 0)
}

func ptWait(tid, flags int) stopResult {
	var ws unix.WaitStatus
	for {
		pid, err := wait4(tid, &ws, unix.WALL|flags)
		if err == unix.EINTR {
			continue
		}
		if r, done := waitResult(pid, err, ws, flags); done {
			return r
		}
	}
}

// ptWaitUntil waits for tid's stop for d at most, on t (the calling
// thread's): it returns stopNone if none came by then.
func ptWaitUntil(tid int, t *waitTimer, d time.Duration) stopResult {
	if !t.set(d) {
		return stopResult{kind: stopNone}
	}
	defer t.set(0)
	var status int32
	for {
		// Raw, as the stoppers' other system calls (see above): it
		// blocks for a tick at most.
		r, _, e := unix.RawSyscall6(unix.SYS_WAIT4, uintptr(tid), uintptr(unsafe.Pointer(&status)), unix.WALL, 0, 0, 0)
		if e == unix.EINTR {
			// The timer's signal, or another that ended the wait: the
			// caller looks again as it would have after a sleep.
			return stopResult{kind: stopNone}
		}
		var err error
		if e != 0 {
			err = e
		}
		if res, done := waitResult(int(r), err, unix.WaitStatus(status), 0); done {
			return res
		}
	}
}

// waitResult makes a stopResult of what wait4 with flags returned; done
// is false where a blocking wait is to go on (the thread continued).
func waitResult(pid int, err error, ws unix.WaitStatus, flags int) (stopResult, bool) {
	switch {
	case err == unix.ECHILD || err == unix.ESRCH:
		return stopResult{kind: stopGone}, true
	case err != nil:
		return stopResult{kind: stopBlocked}, true
	case pid == 0:
		return stopResult{kind: stopNone}, true
	}
	switch {
	case ws.Exited() || ws.Signaled():
		return stopResult{kind: stopGone, status: ws}, true
	case ws.Stopped():
		r := stopResult{kind: stopped}
		// A PTRACE_EVENT_STOP is our interrupt or a group-stop; either
		// way there is no signal to deliver. Anything else is a
		// signal-delivery-stop that overtook the interrupt, and the
		// signal must be delivered on detach or the target would lose
		// it.
		if int(ws)>>16 != unix.PTRACE_EVENT_STOP {
			r.sig = ws.StopSignal()
		}
		return r, true
	}
	// Continued is not a ptrace-stop.
	return stopResult{kind: stopNone}, flags&unix.WNOHANG != 0
}

// wait4 is unix.Wait4, raw where it does not block (WNOHANG).
func wait4(tid int, ws *unix.WaitStatus, flags int) (int, error) {
	if flags&unix.WNOHANG == 0 {
		return unix.Wait4(tid, ws, flags, nil)
	}
	var status int32
	r, _, e := unix.RawSyscall6(unix.SYS_WAIT4, uintptr(tid), uintptr(unsafe.Pointer(&status)), uintptr(flags), 0, 0, 0)
	*ws = unix.WaitStatus(status)
	if e != 0 {
		return int(r), e
	}
	return int(r), nil
}

// processExited reports whether pid, a child of gprof, has exited and
// waits to be reaped, without reaping it.
func processExited(pid int) bool {
	var info [128]byte
	for {
		_, _, e := unix.Syscall6(unix.SYS_WAITID, unix.P_PID, uintptr(pid),
			uintptr(unsafe.Pointer(&info)), unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, 0, 0)
		runtime.KeepAlive(&info)
		switch e {
		case unix.EINTR:
			continue
		case unix.ECHILD:
			// Already reaped (by the sampler's own wait4, see sampleThread).
			return true
		case 0:
		default:
			return false
		}
		break
	}
	// si_pid follows si_signo, si_errno, si_code and, on 64-bit systems,
	// the padding that aligns the union.
	off := 12
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off = 16
	}
	pid32 := *(*int32)(unsafe.Pointer(&info[off]))
	code := *(*int32)(unsafe.Pointer(&info[8]))
	// A ptrace-stop of a tracee that is also our child shows up here too,
	// whatever the options; only CLD_EXITED, CLD_KILLED and CLD_DUMPED mean
	// the process is gone.
	return pid32 != 0 && code >= 1 && code <= 3
}

// readStack copies up to len(buf) bytes of tid's memory from sp, stopping
// at end (the end of the stack mapping, or 0 if unknown). Reads are split
// at page boundaries because process_vm_readv gives up at the first
// unmapped page; what comes before it is still returned.
func readStack(pid int, sp, end uint64, buf []byte, iov []unix.RemoteIovec) ([]byte, []unix.RemoteIovec) {
	n := uint64(len(buf))
	if end > sp && end-sp < n {
		n = end - sp
	}
	if n == 0 || sp == 0 {
		return buf[:0], iov
	}
	page := uint64(unix.Getpagesize())
	iov = iov[:0]
	for a, stop := sp, sp+n; a < stop; {
		next := (a &^ (page - 1)) + page
		if next > stop {
			next = stop
		}
		iov = append(iov, unix.RemoteIovec{Base: uintptr(a), Len: int(next - a)})
		a = next
	}
	local := unix.Iovec{Base: &buf[0]}
	local.SetLen(int(n))
	got, _, e := unix.RawSyscall6(unix.SYS_PROCESS_VM_READV, uintptr(pid), uintptr(unsafe.Pointer(&local)), 1,
		uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)), 0)
	runtime.KeepAlive(buf)
	if e != 0 || int(got) < 0 {
		return buf[:0], iov
	}
	return buf[:got], iov
}

// kernelEntry is how a thread last entered the kernel, as its registers
// tell (see ptGetRegs); a stopped thread stops on its way out.
type kernelEntry uint8

const (
	entryUnknown   kernelEntry = iota
	entryInterrupt             // an interrupt: at no particular instruction
	entrySyscall               // a system call
	entryException             // a fault, at the instruction that faulted
)
