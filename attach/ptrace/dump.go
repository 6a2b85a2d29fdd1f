//go:build linux

package ptrace

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/proc"
	"github.com/gprof-dev/gprof/attach/internal/procmaps"
	"github.com/gprof-dev/gprof/event"
)

// A dump (gprof dump): every thread of a process stopped at once, its
// registers, a copy of its stack and its interpreter's frames taken, and
// every thread let go, as gdb's "thread apply all bt" or py-spy dump do,
// but for no longer than the copies take. ptrace works where perf events
// are denied, and a dump needs nothing else: no timer, no sampling.
//
// Each thread is seized and interrupted, all before any is waited for, so
// that they stop together and the stacks are of one instant. A thread in
// an uninterruptible sleep stops only when it wakes: dumpStopWait bounds
// the wait, and such a thread is reported, not dumped. Should it stop
// later, it is let go as soon as it does; until then the kernel holds it
// for gprof, and lets it go when gprof exits.

const (
	dumpStopWait  = time.Second     // for every thread to stop
	dumpLateWait  = 2 * time.Second // then, for the late ones to stop, to let them go
	dumpStackSize = 512 << 10
)

// dumped is what the stop took of one thread.
type dumped struct {
	tid    int
	at     int64
	regs   event.Regs
	stack  []byte
	interp any
}

func dumpStacks(opts attach.DumpOptions, h event.Handler) (attach.DumpResult, error) {
	res := attach.DumpResult{Backend: "ptrace"}
	pid := opts.Pid
	switch {
	case pid == os.Getpid():
		return res, fmt.Errorf("pid %d is gprof itself", pid)
	case !proc.ProcessExists(pid):
		return res, fmt.Errorf("pid %d: %w", pid, attach.ErrNoSuchProcess)
	}
	if _, comm, kthread, ok := proc.TaskInfo(pid); ok && kthread {
		return res, fmt.Errorf("pid %d is a kernel thread (%s): it has no user stack to dump", pid, comm)
	}
	tids, err := proc.ListTasks(pid)
	if err != nil {
		return res, fmt.Errorf("pid %d: %w", pid, attach.ErrNoSuchProcess)
	}
	if opts.Tids != nil {
		for _, tid := range opts.Tids {
			if !slices.Contains(tids, tid) {
				return res, fmt.Errorf("thread %d is not a thread of pid %d: %w", tid, pid, attach.ErrNoSuchProcess)
			}
		}
		tids = slices.Clone(opts.Tids)
	}
	slices.Sort(tids)
	size := opts.StackSize
	if size <= 0 {
		size = dumpStackSize
	}

	// What /proc says, before the stop changes it.
	now := event.Now()
	argv := proc.ReadCmdline(pid)
	var evs []event.Event
	for _, tid := range tids {
		th := attach.DumpThread{Tid: tid, Name: proc.ReadTaskComm(pid, tid), Wchan: readWchan(pid, tid)}
		if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid)); err == nil {
			th.State, _, _, _ = parseStat(data)
		}
		res.Threads = append(res.Threads, th)
		evs = append(evs, &event.Comm{Time: now, Pid: pid, Tid: tid, Name: th.Name, Argv: argv})
	}
	maps, err := procmaps.Read(pid, now)
	if err != nil && proc.ProcessExists(pid) {
		return res, fmt.Errorf("cannot read the mappings of pid %d: %v", pid, err)
	}
	for _, m := range maps {
		evs = append(evs, m)
	}
	var ranges []ptRange
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid)); err == nil {
		for _, line := range bytes.Split(data, []byte("\n")) {
			if r, ok := parseRange(line); ok {
				ranges = append(ranges, r)
			}
		}
	}

	if opts.InterpFind != nil {
		// Finding the interpreter in the process (its runtime state,
		// its version's layouts) is done once per process and takes
		// the longest: done now, the stop reads only frames.
		opts.InterpFind(pid, attach.ProcessMemory(pid))
	}

	// The stop, on one OS thread: ptrace requests must come from the
	// thread that seized.
	type outcome struct {
		got     []dumped
		why     map[int]string
		stopped time.Duration
		err     error
	}
	done := make(chan outcome, 1)
	go func() {
		runtime.LockOSThread()
		var o outcome
		var late []int
		o.got, o.why, o.stopped, late, o.err = stopAll(pid, tids, ranges, size, opts.Interp)
		if len(late) == 0 {
			runtime.UnlockOSThread()
		}
		// Else the goroutine ends locked: its thread ends, and the
		// kernel lets go what it still traced.
		done <- o
	}()
	o := <-done
	if o.err != nil {
		return res, o.err
	}
	res.Stopped = o.stopped
	for i := range res.Threads {
		th := &res.Threads[i]
		th.Why = o.why[th.Tid]
		th.Captured = th.Why == ""
	}
	for _, d := range o.got {
		evs = append(evs, &event.Sample{Time: d.at, Pid: pid, Tid: d.tid, CPU: -1, CPUDelta: -1,
			Stack: []uint64{d.regs.IP}, Regs: &d.regs, StackCopy: d.stack, Interp: d.interp})
	}
	for _, e := range evs {
		h(e)
	}
	return res, nil
}

// stopAll stops tids of pid, takes what a dump needs of each and lets them
// go. late lists the threads that never stopped (still seized).
func stopAll(pid int, tids []int, ranges []ptRange, size int, interp func(pid, tid int, mem attach.Memory) any) (got []dumped, why map[int]string, held time.Duration, late []int, err error) {
	why = map[int]string{}
	var seized []int
	for _, tid := range tids {
		switch err := ptSeize(tid); err {
		case nil:
			seized = append(seized, tid)
		case unix.ESRCH:
			why[tid] = "exited before it could be stopped"
		case unix.EPERM:
			if len(seized) == 0 {
				return nil, nil, 0, nil, ptPermissionError(pid, err)
			}
			why[tid] = "not permitted: " + err.Error()
		default:
			why[tid] = "could not be stopped: " + err.Error()
		}
	}
	t0 := time.Now()
	for _, tid := range seized {
		if err := ptInterrupt(tid); err != nil {
			why[tid] = "could not be stopped: " + err.Error()
		}
	}
	mem := attach.ProcessMemory(pid)
	buf := make([]byte, size)
	var iov []unix.RemoteIovec
	take := func(tid int, r stopResult) {
		d := dumped{tid: tid, at: event.Now()}
		if _, err := ptGetRegs(tid, &d.regs); err != nil {
			why[tid] = "its registers could not be read: " + err.Error()
		} else {
			end, _ := findRange(ranges, d.regs.SP)
			var st []byte
			st, iov = readStack(pid, d.regs.SP, end, buf, iov)
			d.stack = slices.Clone(st)
			if interp != nil {
				d.interp = interp(pid, tid, mem)
			}
			got = append(got, d)
		}
		ptDetach(tid, r.sig)
	}
	pending := slices.DeleteFunc(slices.Clone(seized), func(tid int) bool { return why[tid] != "" })
	deadline := t0.Add(dumpStopWait)
	for len(pending) > 0 && time.Now().Before(deadline) {
		left := pending[:0]
		for _, tid := range pending {
			switch r := ptPoll(tid); r.kind {
			case stopped:
				take(tid, r)
			case stopNone:
				left = append(left, tid)
			default:
				why[tid] = "exited while it was being stopped"
			}
		}
		pending = left
		if len(pending) > 0 {
			sleep(20 * time.Microsecond)
		}
	}
	held = time.Since(t0)
	// Those that did not stop in time are not dumped; they are let go as
	// soon as they stop.
	for _, tid := range pending {
		why[tid] = fmt.Sprintf("did not stop within %v (in an uninterruptible sleep?)", dumpStopWait)
	}
	deadline = time.Now().Add(dumpLateWait)
	for len(pending) > 0 && time.Now().Before(deadline) {
		left := pending[:0]
		for _, tid := range pending {
			if r := ptPoll(tid); r.kind == stopNone {
				left = append(left, tid)
			} else if r.kind == stopped {
				ptDetach(tid, r.sig)
			}
		}
		pending = left
		time.Sleep(time.Millisecond)
	}
	return got, why, held, pending, nil
}
