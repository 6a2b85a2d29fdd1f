//go:build linux

package ptrace

// The ptrace backend's targets: processes and threads as they come, exec
// and go, and the children a traced process starts.

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach/internal/proc"
	"github.com/gprof-dev/gprof/attach/internal/procmaps"
	"github.com/gprof-dev/gprof/event"
)

// addProcess starts tracking pid (a child of ppid when ppid is nonzero) and
// reports what it has: its threads, names and mappings.
func (s *ptSampler) addProcess(pid, ppid int, launched bool) {
	s.addProc(pid, ppid, launched, nil)
}

// addProcessThreads starts tracking the threads only of pid, alone.
func (s *ptSampler) addProcessThreads(pid int, only map[int]bool) {
	s.addProc(pid, 0, false, only)
}

func (s *ptSampler) addProc(pid, ppid int, launched bool, only map[int]bool) {
	now := event.Now()
	pr := &ptProc{pid: pid, sh: newSharedProc(pid, only == nil), only: only, threads: map[int]*ptThread{}, seen: map[procmaps.Key]bool{}}
	// The CPU time its threads used before they were found is not theirs
	// to be sampled for (see checkCold).
	pr.sh.unseen, _ = processCPU(pid)
	pr.childrenSeen = -1
	pr.exe, _ = exeID(pid)
	s.procs[pid] = pr
	s.order = append(s.order, pid)
	if ppid != 0 {
		s.emit(&event.Fork{Time: now, Pid: pid, Tid: pid, Ppid: ppid, Ptid: ppid})
	}
	s.refreshMaps(pr, now)
	tids, err := proc.ListTasks(pid)
	if err != nil {
		return
	}
	tids = pr.filter(tids)
	if only == nil {
		pr.sh.threads.Store(int32(len(tids)))
	}
	argv := proc.ReadCmdline(pid)
	// A forked child is named as perf names it: a copy of its parent (the
	// Fork above), then by its own name, which it may have changed, not
	// by the command line it shares with its parent. Only a child that
	// runs another program already is reported as an exec, with its new
	// command line (and without the parent's mappings).
	execd := launched
	if parent := s.procs[ppid]; ppid != 0 && parent != nil {
		if pr.exe == parent.exe {
			argv = nil
		} else {
			execd = true
		}
	}
	for _, tid := range tids {
		th := s.newThread(pr, tid, false)
		pr.threads[tid] = th
		c := &event.Comm{Time: now, Pid: pid, Tid: tid, Name: th.comm}
		if tid == pid || only != nil {
			c.Argv, c.Exec = argv, execd
		}
		s.emit(c)
	}
	pr.tids = tids
	pr.sh.publishKnown(tids)
}

// filter drops from tids the threads that are not sampled, in place.
func (pr *ptProc) filter(tids []int) []int {
	if pr.only == nil {
		return tids
	}
	return slices.DeleteFunc(tids, func(tid int) bool { return !pr.only[tid] })
}

// newThread starts tracking tid of pr, and hands it to a stopper (the
// threads in turn: one that runs elsewhere is handed on at the first look
// that finds it ran, and most of 10,000 threads never run, so their CPU is
// not worth a read each while attaching).
//
// A thread started since its process was found (fresh) is owed samples
// for all its CPU time, from its first instruction: the coordinator finds
// it up to a period after it started, and a busy thread of a 64 ms
// program had run 2 to 10 ms by then, which its samples never covered
// (0.80 to 0.87 of its samples).
func (s *ptSampler) newThread(pr *ptProc, tid int, fresh bool) *ptThread {
	th := &ptThread{comm: proc.ReadTaskComm(pr.pid, tid)}
	st, _ := s.readSchedstat(pr.pid, tid)
	if fresh {
		st.run = 0
	}
	th.base = st.run
	th.sh = newShared(pr.sh, tid, st)
	// A thread's first sample is due after a random part of an interval of
	// its CPU time, not a whole one, so that threads found together are
	// not sampled in step.
	th.sh.due = rand.Int64N(int64(s.interval))
	s.threads = append(s.threads, th.sh)
	owner := len(s.threads) % len(s.workers)
	if fresh || tid == s.heldTid {
		// A new thread, or the launched command held at its exec: to
		// the stopper of the CPU it is on (where it stopped), woken to
		// take it at once, and to look at it then (queued) even if it
		// has not run yet; a thread given to another is handed on only
		// once seen to have run elsewhere, a tick later. Taken at that
		// stopper's next timed tick, up to 1.5 intervals on, the
		// command's first sample came 2 intervals of its CPU time after
		// its exec in one run of 8.
		if _, _, cpu, ok := s.readStat(pr.pid, tid); ok {
			owner = s.workerFor(cpu)
		}
		th.sh.queued = true
		s.workers[owner].inbox.push(th.sh)
		if tid == s.heldTid {
			s.heldOwner = owner // woken once it is let go (startLaunched)
		} else {
			s.workers[owner].wake()
		}
		return th
	}
	s.workers[owner].inbox.push(th.sh)
	return th
}

// threadGone stops the stoppers from looking at th; its owner closes its
// files and drops it at its next tick.
func (s *ptSampler) threadGone(th *ptThread) {
	th.sh.gone.Store(true)
}

// scanCostFactor: a process's threads are listed, and its CPU clock read,
// at most once per this many times what that cost (so at most
// 1/scanCostFactor of the coordinator's time), and at most every
// ptCoordPeriod.
const scanCostFactor = 40

// paced is how long to wait before doing again what took cost of the
// coordinator's CPU: scanCostFactor times as long, but no more than
// ptPaceLimit.
func paced(cost time.Duration) time.Duration {
	return min(cost*scanCostFactor, ptPaceLimit)
}

// coldDrift is the share of a CPU by which the unseen CPU time of a
// process may grow without setting off a sweep (see checkCold): a cold
// thread that uses less is found by the stoppers' background looks
// (coldPerSecond) only.
const coldDrift = 0.03

// ptPaceLimit bounds how long paced work waits: a process of 10,000
// threads, whose listing and mappings take 20 ms to read, has its exits and
// new threads noticed within a second.
const ptPaceLimit = time.Second

// checkCold compares each process's CPU time with what the stoppers saw
// its threads use: when it grew by more than its running threads could
// have used unseen since their last looks (each at most a couple of
// intervals, and at most one per CPU runs at a time), a cold thread ran,
// and every stopper looks at all its cold threads at its next tick. One
// clock read covers all of a process's threads.
func (s *ptSampler) checkCold() {
	threshold := max(int64(len(s.workers)+1)*2*int64(s.interval), int64(2*time.Millisecond))
	for _, pid := range s.order {
		pr := s.procs[pid]
		if pr == nil || time.Now().Before(pr.nextCold) {
			continue
		}
		// The clock sums the threads' times as it is read (0.8 ms for
		// 10,000 threads): read at most once per scanCostFactor times
		// that.
		t0, c0 := time.Now(), threadCPU()
		clk, ok := processCPU(pid)
		if !ok {
			continue
		}
		// What its hot threads used since their owners last looked is
		// not the cold threads' (a stopper held up on a loaded machine
		// would otherwise set off a sweep of thousands of threads); there
		// are few of them, so their schedstat is read here.
		var lag int64
		for _, th := range pr.hot() {
			if st, ok := s.readSchedstat(pid, th.tid); ok {
				lag += max(st.run-th.seenRun.Load(), 0)
			}
		}
		unseen := clk - pr.sh.seen.Load() - lag
		pr.nextCold = t0.Add(paced(threadCPU() - c0))
		// The baseline also drifts up by up to coldDrift of the time
		// since the last check: the sum of what the stoppers saw lags
		// the clock by a little that never comes back (about 1% of the
		// time with 10,000 threads and 2 busy ones), which set off a
		// sweep every half second, each a stopper's 50 to 70 ms of CPU
		// during which the busy thread on its CPU went unsampled. A cold
		// thread that runs for real adds to the difference at the rate
		// it runs, and is found as soon as it has run threshold more.
		if !pr.coldAt.IsZero() {
			pr.sh.unseen += int64(coldDrift * float64(t0.Sub(pr.coldAt)))
		}
		pr.coldAt = t0
		switch {
		case unseen < pr.sh.unseen:
			pr.sh.unseen = unseen
		case unseen-pr.sh.unseen > threshold:
			pr.sh.unseen = unseen
			s.sweepGen.Add(1)
		}
	}
}

// processCPU reads a process's CPU time (all its threads', the exited
// ones' too) from its CPU clock: any process's may be read.
func processCPU(pid int) (int64, bool) {
	const cpuclockSched = 2
	var ts unix.Timespec
	if err := unix.ClockGettime(int32(^pid<<3|cpuclockSched), &ts); err != nil {
		return 0, false
	}
	return ts.Nano(), true
}

// processGone reports the exit of all of pr's threads, the main one last.
func (s *ptSampler) processGone(pr *ptProc) {
	now := event.Now()
	for _, tid := range pr.tids {
		if th := pr.threads[tid]; th != nil {
			s.threadGone(th)
		}
		if tid != pr.pid {
			s.emit(&event.Exit{Time: now, Pid: pr.pid, Tid: tid})
		}
	}
	s.emit(&event.Exit{Time: now, Pid: pr.pid, Tid: pr.pid})
	pr.sh.dropAdopted(nil)
	delete(s.procs, pr.pid)
}

// scanThreads reconciles pr's threads with /proc and reports false when
// the process is gone.
func (s *ptSampler) scanThreads(pr *ptProc, slow bool) bool {
	tids, err := proc.ListTasks(pr.pid)
	if err != nil || len(tids) == 0 || s.zombie(pr.pid, tids) {
		s.processGone(pr)
		return false
	}
	if pr.only != nil {
		if tids = pr.filter(tids); len(tids) == 0 {
			// The threads sampled alone are gone; the process may not be.
			now := event.Now()
			for _, tid := range pr.tids {
				s.threadGone(pr.threads[tid])
				s.emit(&event.Exit{Time: now, Pid: pr.pid, Tid: tid})
			}
			delete(s.procs, pr.pid)
			return false
		}
	}
	now := event.Now()
	for _, tid := range pr.tids {
		if _, found := slices.BinarySearch(tids, tid); !found {
			s.threadGone(pr.threads[tid])
			s.emit(&event.Exit{Time: now, Pid: pr.pid, Tid: tid})
			delete(pr.threads, tid)
		}
	}
	var release []*shared
	known := pr.tids[:0]
	for _, tid := range tids {
		if pr.threads[tid] != nil {
			known = append(known, tid)
			continue
		}
		th, rel, ok := s.takeNew(pr, tid)
		if !ok {
			continue // its adoption slot is busy: at the next listing
		}
		known = append(known, tid)
		if rel != nil {
			release = append(release, rel)
		}
		pr.threads[tid] = th
		s.reportNew(pr, th)
	}
	pr.tids = known
	pr.sh.publishKnown(pr.tids)
	for _, th := range release {
		pr.sh.release(th)
	}
	pr.sh.dropAdopted(tids)
	if pr.only == nil {
		// Short of a thread that waits (its slot busy), the count still
		// differs from the stoppers', which ask for another listing.
		pr.sh.threads.Store(int32(len(known)))
	}
	if !slow {
		return true
	}

	s.noticeExec(pr, now)
	for _, tid := range pr.tids {
		th := pr.threads[tid]
		// Only a thread that ran can have renamed itself (others may
		// rename it through /proc, rarely; the next look after it runs
		// finds that).
		if !th.sh.named.Swap(false) {
			continue
		}
		if c := proc.ReadTaskComm(pr.pid, tid); c != "" && c != th.comm {
			th.comm = c
			s.emit(&event.Comm{Time: now, Pid: pr.pid, Tid: tid, Name: c})
		}
	}
	if now-pr.mapsAt >= int64(ptSlowPeriod) {
		s.refreshMaps(pr, now)
	}
	return true
}

// noticeExec reports an exec of pr that happened since the last look:
// its old mappings are gone and its main thread has a new name and
// command line. It is checked every slow tick, and also as soon as a new
// thread or a sample outside the known mappings hints at an exec, so that
// nothing of the new program is attributed to the old one.
func (s *ptSampler) noticeExec(pr *ptProc, now int64) {
	id, ok := exeID(pr.pid)
	if !ok || id == pr.exe {
		return
	}
	pr.exe = id
	pr.exec, pr.all, pr.seen = nil, nil, map[procmaps.Key]bool{}
	pr.mapsAt = 0
	if th := pr.threads[pr.pid]; th != nil {
		th.comm = proc.ReadTaskComm(pr.pid, pr.pid)
		s.emit(&event.Comm{Time: now, Pid: pr.pid, Tid: pr.pid, Name: th.comm, Exec: true, Argv: proc.ReadCmdline(pr.pid)})
	}
}

// zombie reports whether a process has exited but not been reaped: only
// its main thread is left, as a zombie. Attached targets may stay like
// that for as long as their parent neglects them.
func (s *ptSampler) zombie(pid int, tids []int) bool {
	if len(tids) != 1 || tids[0] != pid {
		return false
	}
	st, _, _, ok := s.readStat(pid, pid)
	return !ok || st == 'Z' || st == 'X'
}

// maxChildFiles bounds the threads whose children files the coordinator
// reads each period; with more, new children wait for the slow scan.
const maxChildFiles = 512

// findChildren starts tracking the processes that the targets' threads
// started since the last look, from /proc/PID/task/TID/children (where the
// kernel has it): a child running under a shell or a launcher (`gprof
// record -- time make`) is sampled from its first period, not from the
// next full scan of /proc, up to ptSlowPeriod later.
func (s *ptSampler) findChildren() {
	if s.noChildFiles {
		return
	}
	n := 0
	for i := 0; i < len(s.order); i++ { // s.order grows as children are found
		pr := s.procs[s.order[i]]
		if pr == nil || pr.only != nil {
			continue
		}
		// None of its threads ran since the last look: none started
		// a process (looking would cost a loop over 10,000 threads).
		seen := pr.sh.seen.Load()
		if seen == pr.childrenSeen {
			continue
		}
		pr.childrenSeen = seen
		for _, tid := range pr.tids {
			// Only a thread that ran can have started a process.
			if th := pr.threads[tid]; th != nil && !th.sh.ran.Swap(false) && tid != pr.pid {
				continue
			}
			if n++; n > maxChildFiles {
				return
			}
			data, err := os.ReadFile("/proc/" + strconv.Itoa(pr.pid) + "/task/" + strconv.Itoa(tid) + "/children")
			if errors.Is(err, fs.ErrNotExist) && tid == pr.pid && proc.ProcessExists(pr.pid) {
				s.noChildFiles = true // CONFIG_PROC_CHILDREN is off
				return
			}
			for _, f := range strings.Fields(string(data)) {
				if child, err := strconv.Atoi(f); err == nil && s.procs[child] == nil && child != s.self {
					s.addProcess(child, pr.pid, false)
				}
			}
		}
	}
}

// scanChildren starts tracking processes whose parent is a target.
func (s *ptSampler) scanChildren() {
	f, err := os.Open("/proc")
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	type cand struct{ pid, ppid int }
	var cands []cand
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || s.procs[pid] != nil || pid == s.self {
			continue
		}
		if _, ppid, _, ok := s.readStat(pid, pid); ok && ppid > 1 {
			cands = append(cands, cand{pid, ppid})
		}
	}
	// A child's own children are found in the same scan, parents first.
	sort.Slice(cands, func(i, j int) bool { return cands[i].pid < cands[j].pid })
	for added := true; added; {
		added = false
		for i, c := range cands {
			if c.pid != 0 && s.procs[c.ppid] != nil && s.procs[c.ppid].only == nil {
				s.addProcess(c.pid, c.ppid, false)
				cands[i].pid = 0
				added = true
			}
		}
	}
}
