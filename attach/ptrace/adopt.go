//go:build linux

package ptrace

// Threads a stopper finds before the coordinator does.
//
// A stopper that reads another thread count in a thread's stat than the
// coordinator last found asks the coordinator to list the process's
// threads (nudge). But the coordinator runs under SCHED_BATCH (package
// yield), and with the program's threads busy on every CPU it waits for
// a time slice to end before it runs: the new busy thread of a 64 ms
// program with two of them ran 2 to 3 ms before its first sample in 4 of
// 20 runs on a quiet 2-CPU VM. So the stopper, on its CPU and ahead of
// the program, lists the threads of a small process itself and adopts
// each one the coordinator does not know: it makes the thread's shared
// state, owed samples from its first instruction as the coordinator's
// would be, and hands it to the stopper of its CPU. The coordinator
// registers the adopted thread (names it, reports it) when it next lists
// the process or when the thread's first sample reaches it, whichever
// comes first.
//
// Neither side takes a lock (a stopper never waits: see worker.go). A
// thread is adopted through a slot of its process's table, chosen by its
// tid, that a stopper fills with a compare-and-swap, and that the
// coordinator fills with a placeholder while it makes a thread of its
// own: a thread has one shared state whoever gets there first.
//
//	stopper: CAS slot nil -> its thread; then, if the coordinator's
//	         known tids (published before it empties the slot) hold the
//	         tid, it gives the slot back and drops the thread.
//	coordinator: takes the stopper's thread from the slot, or puts a
//	         placeholder there; registers; publishes its known tids;
//	         empties the slot.
//
// A slot that holds another thread makes each side leave the tid to the
// other (the coordinator to its next listing, which comes at once since
// the thread count still differs).

import (
	"math/rand/v2"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach/internal/proc"
	"github.com/gprof-dev/gprof/event"
)

const (
	// adoptSlots is the size of a process's adoption table.
	adoptSlots = 64
	// adoptMax: a stopper lists the threads of a process that has at most
	// this many (a listing of a few µs); a bigger one's new threads wait
	// for the coordinator.
	adoptMax = 64
)

// slot returns tid's adoption slot in pr.
func (pr *sharedProc) slot(tid int) *atomicShared {
	return &pr.adopt[tid%adoptSlots]
}

// knows says whether the coordinator tracks tid, as it last published.
func (pr *sharedProc) knows(tid int) bool {
	k := pr.known.Load()
	if k == nil {
		return false
	}
	_, found := slices.BinarySearch(*k, tid)
	return found
}

// adoptNew lists the threads of pr, which now has count threads, and
// adopts those the coordinator does not know (see above).
func (w *worker) adoptNew(pr *sharedProc, count int32) {
	if !pr.adoptable.Load() || count > adoptMax || pr.known.Load() == nil {
		return
	}
	tids, ok := listTasksRaw(pr.taskDir, w.buf, w.tids[:0])
	w.tids = tids
	if !ok {
		return
	}
	for _, tid := range tids {
		if pr.knows(tid) || pr.slot(tid).Load() != nil {
			continue
		}
		// Its CPU time counts from its start (run 0), as a new thread's
		// does with the coordinator (newThread).
		th := newShared(pr, tid, ptSched{})
		th.due = rand.Int64N(int64(w.s.interval))
		th.adoptedAt = w.woke
		th.queued = true // its first look sees whether it runs
		if !pr.tryAdopt(th) {
			continue
		}
		w.stats.adopted++
		owner := w.idx
		if _, cpu, ok := th.readStat(w.buf); ok {
			owner = w.s.workerFor(cpu)
		}
		// Its owner takes it at its next tick, which comes at once: its
		// CPU time since its start is owed samples already.
		w.s.workers[owner].inbox.push(th)
		if owner == w.idx {
			w.foresee(w.wokeAt)
		} else {
			w.s.workers[owner].wake()
		}
	}
	// Not listed again at every look until the coordinator has listed it.
	pr.threads.Store(count)
}

// tryAdopt is the stopper's side: it puts th, new, in its slot, and
// reports whether th is now the thread's one shared state (the
// coordinator takes it from the slot); false: the slot was taken, or the
// coordinator registered the thread meanwhile.
func (pr *sharedProc) tryAdopt(th *shared) bool {
	slot := pr.slot(th.tid)
	if !slot.CompareAndSwap(nil, th) {
		return false
	}
	if pr.knows(th.tid) {
		slot.CompareAndSwap(th, nil)
		return false
	}
	return true
}

// claim is the coordinator's side for tid, which it does not know: it
// returns the thread a stopper adopted (still in its slot), or puts a
// placeholder in the slot (placed) for the coordinator to make its own;
// busy says the slot holds another thread, and tid waits.
func (pr *sharedProc) claim(tid int) (adopted, placed *shared, busy bool) {
	slot := pr.slot(tid)
	for {
		cur := slot.Load()
		switch {
		case cur == nil:
			p := &shared{tid: tid, placeholder: true}
			if slot.CompareAndSwap(nil, p) {
				return nil, p, false
			}
		case cur.tid == tid && !cur.placeholder:
			return cur, nil, false
		default:
			return nil, nil, true
		}
	}
}

// release empties the slot th (an adopted thread or a placeholder) is in,
// once the coordinator has published that it knows th's tid.
func (pr *sharedProc) release(th *shared) {
	pr.slot(th.tid).CompareAndSwap(th, nil)
}

// publishKnown publishes tids (sorted) as the threads the coordinator
// tracks.
func (pr *sharedProc) publishKnown(tids []int) {
	k := slices.Clone(tids)
	pr.known.Store(&k)
}

// dropAdopted empties the slots of threads adopted and gone before the
// coordinator registered them (not in tids, the process's threads now; all
// of them when tids is nil: the process is gone), and tells their owners.
func (pr *sharedProc) dropAdopted(tids []int) {
	for i := range pr.adopt {
		th := pr.adopt[i].Load()
		if th == nil || th.placeholder {
			continue
		}
		if _, found := slices.BinarySearch(tids, th.tid); found {
			continue
		}
		if pr.adopt[i].CompareAndSwap(th, nil) {
			th.gone.Store(true)
		}
	}
}

// listTasksRaw lists the tids in dir (/proc/PID/task/, NUL-terminated)
// into tids with raw system calls (see sys.go), using buf.
func listTasksRaw(dir []byte, buf []byte, tids []int) ([]int, bool) {
	fd, _, e := unix.RawSyscall6(unix.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&dir[0])),
		uintptr(unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC), 0, 0, 0)
	if e != 0 {
		return tids, false
	}
	defer unix.Close(int(fd))
	for {
		n, _, e := unix.RawSyscall(unix.SYS_GETDENTS64, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		if e != 0 {
			return tids, false
		}
		if n == 0 {
			break
		}
		for off := 0; off < int(n); {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type
			// u8, name (NUL-terminated).
			reclen := int(*(*uint16)(unsafe.Pointer(&buf[off+16])))
			name := buf[off+19 : off+reclen]
			if i := slices.Index(name, 0); i >= 0 {
				name = name[:i]
			}
			if tid, ok := atoi(name); ok {
				tids = append(tids, tid)
			}
			off += reclen
		}
	}
	slices.Sort(tids)
	return tids, true
}

// atoi parses a decimal tid without allocating.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// takeNew is the coordinator's side of a thread new to it (see claim):
// the thread a stopper adopted, or one of its own (newThread). release,
// if not nil, is to be released once the coordinator has published that
// it knows tid; ok false says tid waits for the next listing.
func (s *ptSampler) takeNew(pr *ptProc, tid int) (th *ptThread, release *shared, ok bool) {
	adopted, placed, busy := pr.sh.claim(tid)
	switch {
	case busy:
		return nil, nil, false
	case adopted != nil:
		return s.trackAdopted(pr, adopted), adopted, true
	}
	return s.newThread(pr, tid, true), placed, true
}

// trackAdopted makes the coordinator's record of sh, a thread a stopper
// adopted; its stopper has it already.
func (s *ptSampler) trackAdopted(pr *ptProc, sh *shared) *ptThread {
	s.threads = append(s.threads, sh)
	return &ptThread{comm: proc.ReadTaskComm(pr.pid, sh.tid), sh: sh}
}

// registerAdopted registers the thread a stopper adopted as tid of pr,
// if one did, when its first sample reaches the coordinator before the
// coordinator's next listing of pr; nil if none did. Only the
// coordinator empties a slot that holds an adopted thread (release,
// dropAdopted), so the thread found there stays until this registers it.
func (s *ptSampler) registerAdopted(pr *ptProc, tid int) *ptThread {
	sh := pr.sh.slot(tid).Load()
	if sh == nil || sh.tid != tid || sh.placeholder {
		return nil
	}
	th := s.trackAdopted(pr, sh)
	pr.threads[tid] = th
	s.reportNew(pr, th)
	i, _ := slices.BinarySearch(pr.tids, tid)
	pr.tids = slices.Insert(pr.tids, i, tid)
	pr.sh.publishKnown(pr.tids)
	pr.sh.release(sh)
	return th
}

// reportNew reports a thread started since its process was found: as
// started when a stopper adopted it, or now. A new thread may be the first
// sign of an exec: it belongs to the new program, so the exec is reported
// first, and no later. (Its first sample, reaching the coordinator before
// a listing of the process did, once reported the thread under the old
// program, which the recording then showed twice: once there, with no
// samples, and once under the new program.)
func (s *ptSampler) reportNew(pr *ptProc, th *ptThread) {
	at := event.Now()
	if a := th.sh.adoptedAt; a > 0 && a < at {
		at = a
	}
	s.noticeExec(pr, at)
	s.emit(&event.Fork{Time: at, Pid: pr.pid, Tid: th.sh.tid, Ppid: pr.pid, Ptid: pr.pid})
	s.emit(&event.Comm{Time: at, Pid: pr.pid, Tid: th.sh.tid, Name: th.comm})
}
