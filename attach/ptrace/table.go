//go:build linux

package ptrace

// The target threads as the stoppers see them. Each thread has one owner,
// the stopper of the CPU it last ran on, which keeps it in its own list; a
// thread changes hands through the new owner's inbox, a lock-free stack
// the coordinator (new threads) and the other stoppers (threads that moved)
// push onto and the owner empties at its tick. No stopper ever looks at
// another's threads, so a tick costs what its own CPU's threads cost.

import (
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inbox is a stopper's incoming threads: a lock-free stack linked through
// shared.next. A thread is in at most one inbox: only its owner hands it
// on, and only after taking it out of its own.
type inbox struct{ head atomic.Pointer[shared] }

func (in *inbox) push(th *shared) {
	for {
		old := in.head.Load()
		th.next = old
		if in.head.CompareAndSwap(old, th) {
			return
		}
	}
}

// take empties the inbox, appending its threads to list.
func (in *inbox) take(list []*shared) []*shared {
	for th := in.head.Swap(nil); th != nil; {
		next := th.next
		th.next = nil
		list = append(list, th)
		th = next
	}
	return list
}

// sharedProc is what the stoppers need of a process.
type sharedProc struct {
	pid int
	// all holds every mapping, sorted, so that a stack copy stops where
	// the stack's mapping ends.
	all    atomic.Pointer[[]ptRange]
	denied atomic.Bool // seizing is refused; left alone
	// seen sums the CPU time the stoppers saw its threads use, for the
	// coordinator to compare with the process's CPU time (checkCold);
	// unseen is that difference when the coordinator last asked for a
	// sweep (its field alone).
	seen   atomic.Int64
	unseen int64
	// threads is how many threads the coordinator last found it has (0:
	// not counted, threads sampled alone); a stopper that reads another
	// count in a thread's stat asks it to look again (ptSampler.nudge),
	// and adopts the new ones itself if it may (adoptable: every thread
	// is sampled; see adopt.go). known is the threads the coordinator
	// tracks, sorted (nil until it has listed them), adopt the adoption
	// slots, taskDir its /proc/PID/task/, NUL-terminated.
	threads   atomic.Int32
	adoptable atomic.Bool
	known     atomic.Pointer[[]int]
	adopt     [adoptSlots]atomicShared
	taskDir   []byte
}

type atomicShared = atomic.Pointer[shared]

func newSharedProc(pid int, adoptable bool) *sharedProc {
	pr := &sharedProc{pid: pid, taskDir: append([]byte("/proc/"+strconv.Itoa(pid)+"/task/"), 0)}
	pr.adoptable.Store(adoptable)
	return pr
}

// shared is one target thread. Only its owner touches the fields below
// next; it hands the thread on (inbox) as the last thing it does with it.
type shared struct {
	pid, tid int
	proc     *sharedProc
	gone     atomic.Bool // exited; the owner closes its files
	closed   atomic.Bool // and has
	next     *shared     // in an inbox

	statPath, schedPath []byte // NUL-terminated
	statFD, schedFD     int    // -1 while not open
	// lastRun is the thread's CPU time at the owner's last look; credit
	// the CPU time, in ns, not yet paid for by a sample; due the credit
	// at which its next sample is due (see duePhase).
	lastRun, credit, due int64
	// idle counts the owner's looks in a row that found it had not run,
	// ranAt is when one last found it had (0: never); see cold.
	idle  int
	ranAt int64
	// lookedAt is when its owner last looked (event.Now; 0: never): the
	// CPU time it ran since, over the wall time, is its share of its CPU.
	lookedAt int64
	// seenRun is lastRun for the coordinator, and isCold whether the
	// thread is in its owner's cold list (see checkCold).
	seenRun atomic.Int64
	isCold  atomic.Bool
	// ran is set by the owner when it finds the thread ran, and cleared
	// by the coordinator, which then looks for its new children.
	ran atomic.Bool
	// named is set with ran, and cleared by the coordinator when it
	// rereads the thread's name.
	named atomic.Bool
	// switches is the thread's count of times put on a CPU, as read at
	// its last stop, or -1. While it has not changed, the thread has not
	// run since that stop, so stopping it again would repeat that sample.
	switches int64
	// off says, with OffCPU, that the thread was found asleep and its
	// sleeping stack reported; woke that the stop that took that stack
	// gave it a little CPU time, which is no sign that it woke, until a
	// look finds it back in its sleep; wokeSeen that a look found it
	// running meanwhile (see look).
	off, woke, wokeSeen bool
	// queued says the owner's last look found it runnable on its CPU
	// (running, or waiting for it): a look that finds it has not run
	// since must still see whether it waits (see look).
	queued bool
	// adoptedAt is when a stopper adopted it (event.Now; 0: the
	// coordinator made it); placeholder says it is no thread but the
	// coordinator's mark in an adoption slot (see adopt.go).
	adoptedAt   int64
	placeholder bool
	interrupted bool // seized and interrupted, its stop not collected
	// moveTo is 1 + the index of the worker to hand the thread to once
	// its stop is collected (it went to that worker's CPU); 0 for none.
	// dueAt is then when the worker that let it go foresaw its next
	// sample due (zero: none), for the new owner to tick at (see look).
	moveTo int
	dueAt  time.Time
	// gen is the turn of sampling on its lastRun counts from, resumeRun
	// its CPU time at its first look in that turn (control.go).
	gen       uint64
	resumeRun int64
}

func newShared(pr *sharedProc, tid int, sched ptSched) *shared {
	base := "/proc/" + strconv.Itoa(pr.pid) + "/task/" + strconv.Itoa(tid) + "/"
	th := &shared{
		pid: pr.pid, tid: tid, proc: pr,
		statPath:  append([]byte(base+"stat"), 0),
		schedPath: append([]byte(base+"schedstat"), 0),
		statFD:    -1, schedFD: -1,
		lastRun:  sched.run,
		switches: -1,
	}
	th.seenRun.Store(sched.run)
	return th
}

// cold says whether the thread is idle enough to be looked at only when
// its process shows unseen CPU time (see coldAfter): not run for
// coldAfter, or never seen running and found waiting twice (attaching to
// 10,000 threads would otherwise look at each for coldAfter).
func (th *shared) cold(now int64) bool {
	if th.idle < 2 {
		return false
	}
	return th.ranAt == 0 || now-th.ranAt >= int64(coldAfter)
}

// openFiles counts the /proc files the stoppers keep open. Reading an
// open file again costs a quarter of opening it each time (1 µs against 6
// for schedstat here), and every owned thread's schedstat is read at
// every tick; past maxOpenFiles, files are opened for each read.
var openFiles atomic.Int64

const maxOpenFiles = 512

// readSchedstat reads the thread's schedstat into buf.
func (th *shared) readSchedstat(buf []byte) (ptSched, bool) {
	data, ok := readProc(th.schedPath, &th.schedFD, buf)
	if !ok {
		return ptSched{}, false
	}
	return parseSchedstat(data)
}

// readStat reads the thread's state letter and CPU from its stat.
func (th *shared) readStat(buf []byte) (state byte, cpu int, ok bool) {
	l, ok := th.readStatLine(buf)
	return l.state, l.cpu, ok
}

// readStatLine reads the thread's stat.
func (th *shared) readStatLine(buf []byte) (statLine, bool) {
	data, ok := readProc(th.statPath, &th.statFD, buf)
	if !ok {
		return statLine{}, false
	}
	return parseStatLine(data)
}

// closeFiles closes the thread's files (its owner, once it is gone).
func (th *shared) closeFiles() {
	th.closeFDs()
	th.closed.Store(true)
}

// closeFDs closes the files kept open for the thread, so that threads
// looked at more often may keep theirs (a thread gone cold).
func (th *shared) closeFDs() {
	for _, fd := range []*int{&th.statFD, &th.schedFD} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
			openFiles.Add(-1)
		}
	}
}

// readProc reads a small /proc file, from an open descriptor kept in *fd
// when there is one or room for one. A thread that has exited reads as
// an error (ESRCH) on a kept descriptor.
func readProc(path []byte, fd *int, buf []byte) ([]byte, bool) {
	if *fd < 0 {
		f, err := openRaw(path)
		if err != nil {
			return nil, false
		}
		if openFiles.Load() >= maxOpenFiles {
			n, err := pread(f, buf)
			unix.Close(f)
			return buf[:max(n, 0)], err == nil && n > 0
		}
		openFiles.Add(1)
		*fd = f
	}
	n, err := pread(*fd, buf)
	return buf[:max(n, 0)], err == nil && n > 0
}

// pread reads from offset 0, raw (see sys.go).
func pread(fd int, buf []byte) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

// openRaw opens a NUL-terminated path read-only without allocating.
func openRaw(path []byte) (int, error) {
	fd, _, e := unix.RawSyscall6(unix.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&path[0])),
		uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// atFDCWD is AT_FDCWD as the syscall's unsigned argument.
var atFDCWD = func() uintptr { v := unix.AT_FDCWD; return uintptr(v) }()
