//go:build linux

package e2e

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestShortProgram launches a 64 ms program (testdata/brief.c) at 1 kHz
// with each Linux backend, 8 times: every run samples its busy thread
// from its first instruction to its last, at least 0.95 of the samples
// its CPU time asks for (the case: ptrace gave 0.74-0.78, its
// first and last milliseconds unsampled; Linux perf gives the program 66
// samples for its 64 ms and its loader's 2). With the perf backend, the
// program also runs with two busy threads, whose counts are checked
// together: its per-CPU events land each firing on whichever thread runs
// there.
//
// The ptrace backend's samples carry the thread's own CPU time since the
// last, so its gaps are measured, the first from the exec (the command
// is held there until its stopper has it). The issue asks for no gap over
// 2 intervals. Due points are up to 1.6 intervals apart and the stopper
// looks again when a thread it found runnable can fall due: the longest
// gap of a run was 1.38 to 1.87 in about 250 runs quiet and 100 beside
// two CPU-bound loops, but for about one run in 60 where a stopper was
// held up (a wake-up, or the Go code between a look and its stop, 1 to
// 1.5 ms late; not pinned down: a Go scheduler hand-back of the
// stopper's goroutine is one candidate; 2.01 to 2.99, and once 6.4). So at most one run of the 8 may have a gap over 2
// (two in a set of 8 is a chance of about 1 in 150), none over 8. Before
// (see predict in attach/ptrace) a thread that got its CPU back from a
// loop just after a look ran on past its due point until the next timed
// tick: 2.65 to 3.13 beside the loops (median runs of 6 sets of 8), and
// 2.0 to 2.8 in 1 to 6 runs of 16 quiet. With two
// threads the perf backend's count is held to 0.9: each pacer's wake-up
// preempts a busy thread, and what it ran since the firing is lost to
// the count (0.937 to 1.047 a thread, 10 runs). ptrace with two busy
// threads is not checked here: quiet, each got 0.984 to 1.016 of its
// samples (10 runs; before ce40846 a stopper livelocked with Go's monitor
// thread left one unsampled for 30 to 430 ms in 3 runs of 30), but
// beside two CPU-bound loops (four busy threads on two CPUs) a gap
// between a thread's samples reached 6.1 intervals, and a thread's
// first sample, which waited for the coordinator to list the thread, 6.4.
// Since the stoppers adopt new threads themselves (attach/ptrace/adopt.go)
// and wait for a stop only until another thread falls due, 2 of 20
// threads there had a gap over 2 intervals (2.04, 2.25), and first gaps
// were 0.22 to 1.29 (10 runs).
func TestShortProgram(t *testing.T) {
	bin := buildC(t, "brief")
	const runs, ms = 8, 64
	interval := time.Millisecond
	for _, be := range []string{"perf", "ptrace"} {
		t.Run(be, func(t *testing.T) {
			var longest []float64
			for run := range runs {
				threads := 1
				if be == "perf" {
					threads = 1 + run%2
				}
				args := []string{"-q", "--backend", be, "--", bin, strconv.Itoa(ms), strconv.Itoa(threads)}
				rec := mustRecord(t, args...)
				cpu := workerCPU(t, rec.stdout)
				if len(cpu) != threads {
					t.Fatalf("run %d: %d threads reported CPU times, want %d: %q", run, len(cpu), threads, rec.stdout)
				}
				var got, want float64
				worst := 0.0
				for _, pr := range rec.profile.Processes {
					for _, th := range pr.Threads {
						ns, ok := cpu[th.Tid]
						if !ok {
							continue
						}
						s := th.Samples
						got += float64(s.Len())
						want += float64(ns) / float64(interval)
						if be != "ptrace" || s.Len() == 0 {
							continue
						}
						what := fmt.Sprintf("run %d, thread %d of %d", run, th.Tid, threads)
						if n := float64(ns) / float64(interval); float64(s.Len()) < 0.95*n {
							t.Errorf("%s: %d samples for %.1f ms of CPU time, want at least 0.95 of %.0f (the first %v of CPU time after the thread's start, %v after the process's)", what, s.Len(), float64(ns)/1e6, n, time.Duration(s.CPUDelta[0]), time.Duration(s.Time[0]-th.Start))
						}
						// The first sample's delta is the thread's CPU time
						// from its start (the exec, for the first thread): a
						// gap like the others.
						for i := 0; i < s.Len(); i++ {
							gap := float64(s.CPUDelta[i]) / float64(interval)
							worst = max(worst, gap)
							if gap > 8 {
								t.Errorf("%s: sample %d came %.2f intervals of CPU time after the one before it (or the thread's start), want 8 at most", what, i, gap)
							}
						}
					}
				}
				bound := 0.95
				if threads > 1 && be == "perf" {
					bound = 0.9
				}
				margin(t, fmt.Sprintf("run %d (%d threads): samples per interval of CPU time", run, threads), got/want, bound)
				if got < bound*want {
					t.Errorf("run %d (%d threads): %.0f samples for %.0f intervals of CPU time, want at least %.2f of them", run, threads, got, want, bound)
				}
				if threads == 1 {
					longest = append(longest, worst)
				} else if be == "ptrace" {
					t.Logf("run %d (%d threads): longest gap %.2f intervals of CPU time", run, threads, worst)
				}
			}
			if be != "ptrace" {
				return
			}
			slices.Sort(longest)
			t.Logf("the program alone, longest gap per run, in intervals of CPU time: %.2f", longest)
			second := longest[len(longest)-2]
			margin(t, "longest gap, second worst run (intervals)", second, 2)
			if second > 2 {
				t.Errorf("two runs or more had a gap over 2 intervals of CPU time: %.2f", longest)
			}
		})
	}
}

// TestPtraceLongRunGaps launches one busy thread for 3 s under the ptrace
// backend and counts its samples that came more than two intervals of its
// CPU time after the one before (each sample carries that time). A thread
// let go onto the idle CPU was often pulled back at once to the one it
// came from, and was then taken only at that CPU's stopper's next timed
// tick (see look in attach/ptrace): 21 to 31 per 1,000 samples over runs
// of 5 to 20 s, which the 64 ms program never showed; now 1 to 1.4 per
// 1,000 there, and 0 or 1 of 3,000 in this test, quiet.
// A perfect sampler has none; the bound leaves room for time the host
// takes the CPU for (steal), which the thread's clock may count.
func TestPtraceLongRunGaps(t *testing.T) {
	bin := buildC(t, "brief")
	const ms = 3000
	rec := mustRecord(t, "-q", "--backend", "ptrace", "--", bin, strconv.Itoa(ms))
	cpu := workerCPU(t, rec.stdout)
	late, samples, longest := 0, 0, 0.0
	for _, pr := range rec.profile.Processes {
		for _, th := range pr.Threads {
			if _, ok := cpu[th.Tid]; !ok {
				continue
			}
			s := th.Samples
			samples += s.Len()
			for i := 1; i < s.Len(); i++ {
				gap := float64(s.CPUDelta[i]) / float64(time.Millisecond)
				longest = max(longest, gap)
				if gap > 2 {
					late++
				}
			}
		}
	}
	if samples < ms*9/10 {
		t.Fatalf("%d samples for %d ms of the thread's CPU time, want about %d", samples, ms, ms)
	}
	perMille := 1000 * float64(late) / float64(samples)
	t.Logf("%d of %d samples more than 2 intervals of the thread's CPU time after the one before (the longest %.2f)", late, samples, longest)
	margin(t, "samples over 2 intervals after the last, per 1,000", perMille, 5)
	if perMille > 5 {
		t.Errorf("%d of %d samples came more than 2 intervals of the thread's CPU time after the one before (%.1f per 1,000, the longest %.2f intervals): want at most 5 per 1,000", late, samples, perMille, longest)
	}
}

// TestShortProgramGaps records the 64 ms program (one busy thread, its
// readings of its CPU clock against the monotonic clock logged) with the
// perf backend and with Linux perf (-F 1000 -k mono), 8 times each,
// interleaved, and measures the gaps between the thread's samples in its
// own CPU time, from the start of its burn to its end: what the sampler
// left unsampled, whatever else ran. The issue asks for no gap over 2
// intervals; gprof spaces its firings 0.4 to 1.6 intervals apart (its
// walk, against lockstep), and a pacer that comes late adds to that
// unless it gives the time back (caughtUp in attach/perf): beside two
// CPU-bound loops, before it did, one run in 30 had a gap of 1.9 to 2.4
// intervals (a pacer held up by Go's scheduler). Now the longest gap of
// a run was 1.35-1.61 intervals quiet (Linux perf's 1.01), and at most
// 1.84 in 60 runs beside the loops. Every run's must be at most 2. Time
// the host took the thread's virtual CPU for, which the guest may charge
// to the thread, is left out of its CPU time (unsteal).
//
// In wall time a gap also holds what kept the thread off its CPU. That
// is gprof's business where gprof did it: its reader reading /proc at
// each sample, real-time, on the program's CPU (5.5 ms of its 64 ms),
// its start-up beside the released command. So on a machine where the
// program had a CPU to itself under Linux perf in every run (it waited
// for it less than a tenth of its CPU time, by its own clocks) and over
// a CPU stood idle meanwhile, the median run's longest wall gap must be
// at most 2.5 intervals (quiet: 1.45-1.65, perf's 1.02-1.08). On a busy
// machine the wall gaps are the scheduler's: beside two CPU-bound loops
// the program shares a CPU with one of them and waits a tick (4 ms here)
// at a time, or has one to itself, as placed when it starts; perf's runs
// were a mix of both (1.0 or 5-6 intervals), gprof's all shared (6.5),
// none of it gprof's (bench/gapcause: its threads kept the program off
// its CPU 1.8 ms a run, two CPU-bound loops 62 ms), and a bound against
// perf's runs failed one suite in two or three there.
func TestShortProgramGaps(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed (apt-get install linux-perf)")
	}
	bin := buildC(t, "brief")
	const runs, ms = 8, "64"
	interval := float64(time.Millisecond)
	var mono unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	realToMono := time.Now().UnixNano() - unix.TimespecToNsec(mono)
	idle0, total0 := cpuIdle(t)
	var cpuGaps, wallGaps [2][]float64
	waited := 0.0 // the program's longest wait for its CPU in perf's runs, as a share of its CPU time
	dir := t.TempDir()
	for run := range runs {
		rec := mustRecord(t, "-q", "--backend", "perf", "--", bin, ms, "1", "log")
		burn := briefLog(t, rec.stdout)
		var times []int64
		for _, pr := range rec.profile.Processes {
			for _, th := range pr.Threads {
				if th.Tid == burn.tid {
					for _, at := range th.Samples.Time {
						times = append(times, rec.profile.Meta.StartTime.UnixNano()+at-realToMono)
					}
				}
			}
		}
		c, w, from := burn.gaps(t, times)
		cpuGaps[0], wallGaps[0] = append(cpuGaps[0], c/interval), append(wallGaps[0], w/interval)
		if c/interval > 2 {
			// What the recording says of itself, for the failure below.
			t.Logf("run %d: a gap of %.2f intervals of CPU time (%.2f of wall time) from %.1f ms into the thread's %.1f ms burn; %d of %d samples in it; events lost: %d; pacers: %s", run, c/interval, w/interval, from/1e6, float64(burn.cpu[len(burn.cpu)-1]-burn.cpu[0])/1e6, burn.count(times), len(times), rec.profile.Meta.LostEvents, rec.profile.Meta.Extra["perf_pacers"])
		}

		data := filepath.Join(dir, fmt.Sprintf("perf%d.data", run))
		out := perfRecord(t, data, "-B", "-N", "-F", "1000", "-g", "-k", "mono", "--", bin, ms, "1", "log")
		burn = briefLog(t, string(out))
		// perf 6.1's script aborts now and then (its own bug, on the
		// same file another time): once more, then leave it.
		script, err := exec.Command("perf", "script", "-i", data, "-F", "tid,time").Output()
		if err != nil {
			script, err = exec.Command("perf", "script", "-i", data, "-F", "tid,time").Output()
		}
		if err != nil {
			t.Skipf("perf script cannot read what perf record wrote: %v", err)
		}
		times = times[:0]
		for _, line := range strings.Split(string(script), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			tid, err1 := strconv.Atoi(f[0])
			sec, err2 := strconv.ParseFloat(strings.TrimSuffix(f[1], ":"), 64)
			if err1 == nil && err2 == nil && tid == burn.tid {
				times = append(times, int64(math.Round(sec*1e9)))
			}
		}
		c, w, _ = burn.gaps(t, times)
		cpuGaps[1], wallGaps[1] = append(cpuGaps[1], c/interval), append(wallGaps[1], w/interval)
		waited = max(waited, float64(burn.waited())/float64(burn.cpu[len(burn.cpu)-1]-burn.cpu[0]))
	}
	idle1, total1 := cpuIdle(t)
	spare := float64(runtime.NumCPU()) * float64(idle1-idle0) / float64(max(1, total1-total0))
	for _, g := range [][]float64{cpuGaps[0], cpuGaps[1], wallGaps[0], wallGaps[1]} {
		slices.Sort(g)
	}
	t.Logf("longest gap per run in the thread's CPU time, in intervals: gprof %.2f, Linux perf %.2f", cpuGaps[0], cpuGaps[1])
	t.Logf("in wall time: gprof %.2f, Linux perf %.2f; under perf the program waited for its CPU at most %.2f of its CPU time in a run; %.2f CPUs stood idle on average", wallGaps[0], wallGaps[1], waited, spare)
	worst := cpuGaps[0][runs-1]
	margin(t, "longest gap in the thread's CPU time, worst run (intervals)", worst, 2)
	if worst > 2 {
		t.Errorf("a gap between the busy thread's samples was %.2f intervals of its CPU time: want at most 2 in every run (gprof's runs %.2f, Linux perf's %.2f)", worst, cpuGaps[0], cpuGaps[1])
	}
	if waited > 0.1 || spare < 1 {
		t.Logf("the wall gaps are not judged: the machine was busy (the program waited for its CPU up to %.2f of its CPU time under Linux perf, %.2f CPUs idle)", waited, spare)
		return
	}
	med := wallGaps[0][runs/2]
	margin(t, "median run's longest wall gap (intervals)", med, 2.5)
	if med > 2.5 {
		t.Errorf("the median run's longest wall gap between samples is %.2f intervals: want at most 2.5 (gprof's runs %.2f, Linux perf's %.2f)", med, wallGaps[0], wallGaps[1])
	}
}

// burnLog is a busy thread's readings of a wall clock and of its CPU
// clock (cpu), in ns: testdata/brief.c's with "log" (monotonic),
// testdata/cpulog.c's (real time).
type burnLog struct {
	tid       int
	wall, cpu []int64
}

// briefLog reads the log of brief's one busy thread from its output.
func briefLog(t *testing.T, out string) burnLog {
	t.Helper()
	var l burnLog
	for _, line := range strings.Split(out, "\n") {
		var tid int
		var w, c int64
		if n, _ := fmt.Sscanf(line, "at %d %d %d", &tid, &w, &c); n != 3 {
			continue
		}
		if l.tid != 0 && tid != l.tid {
			t.Fatalf("brief logged two threads (%d, %d), want one", l.tid, tid)
		}
		l.tid, l.wall, l.cpu = tid, append(l.wall, w), append(l.cpu, c)
	}
	if len(l.wall) < 100 {
		t.Fatalf("brief logged %d readings of its clocks, want thousands: %q", len(l.wall), out)
	}
	if stolen := l.unsteal(); stolen > 0 {
		t.Logf("brief's CPU clock jumped %.2f ms (in all) more than its burn can use between two readings: time the host took its virtual CPU for (steal), left out of the thread's CPU time", float64(stolen)/1e6)
	}
	return l
}

// stolenStep is more CPU time than a round of brief's burn can take
// between two readings of its clocks (5-10 µs, some 40 with a ptrace stop
// in it). Where the host takes a virtual CPU from the guest (steal time),
// the guest may charge part of it to the thread that was on that CPU: a
// thread's clock jumped 3.3 ms in one round while 12 ms of wall time went
// by (/proc/stat's steal moved a tick), and a 64 ms program had a gap of
// 6-13 ms "of its CPU time" between samples about once in 100 runs beside
// two CPU-bound loops, whatever sampled it: time in which nothing ran, on
// that CPU, that a sampler could have caught (its timer cannot fire
// either).
const stolenStep = 500 * time.Microsecond

// unsteal takes out of the thread's CPU clock every jump of more than
// stolenStep between two readings, past the step itself, and returns how
// much it took out.
func (l *burnLog) unsteal() (stolen int64) {
	prev := l.cpu[0]
	for i := 1; i < len(l.cpu); i++ {
		d := l.cpu[i] - prev
		prev = l.cpu[i]
		if d > int64(stolenStep) {
			stolen += d - int64(stolenStep)
		}
		l.cpu[i] -= stolen
	}
	return stolen
}

// cpuAt is the thread's CPU time at wall time w: it ran from a reading on,
// for as long as it took to the next.
func (l burnLog) cpuAt(w int64) int64 {
	i := max(0, sort.Search(len(l.wall), func(i int) bool { return l.wall[i] > w })-1)
	if i+1 >= len(l.wall) {
		return l.cpu[len(l.cpu)-1]
	}
	return l.cpu[i] + min(max(0, w-l.wall[i]), l.cpu[i+1]-l.cpu[i])
}

// waited is the wall time the thread spent off its CPU over its burn.
func (l burnLog) waited() int64 {
	n := len(l.wall) - 1
	return (l.wall[n] - l.wall[0]) - (l.cpu[n] - l.cpu[0])
}

// gaps returns the longest gap between the thread's samples at times
// (monotonic ns) over its burn, in its CPU time (counting the stretches
// before the first and after the last) and in wall time, and where in
// its CPU time the longest in CPU time starts (ns into the burn).
func (l burnLog) gaps(t *testing.T, times []int64) (cpu, wall, from float64) {
	t.Helper()
	n := len(l.wall) - 1
	var in []int64
	for _, at := range times {
		if at >= l.wall[0] && at <= l.wall[n] {
			in = append(in, at)
		}
	}
	if len(in) < 30 {
		t.Fatalf("%d of the busy thread's %d samples fall in its burn, want about 64", len(in), len(times))
	}
	slices.Sort(in)
	last := l.cpu[0]
	for i, at := range in {
		c := l.cpuAt(at)
		if float64(c-last) > cpu {
			cpu, from = float64(c-last), float64(last-l.cpu[0])
		}
		last = c
		if i > 0 {
			wall = max(wall, float64(at-in[i-1]))
		}
	}
	if float64(l.cpu[n]-last) > cpu {
		cpu, from = float64(l.cpu[n]-last), float64(last-l.cpu[0])
	}
	return cpu, wall, from
}

// A jump of the thread's CPU clock past what a round of the burn can use
// comes out of its CPU time from there on.
func TestBurnLogUnsteal(t *testing.T) {
	ms := int64(time.Millisecond)
	l := burnLog{wall: []int64{0, 10, 20, 12 * ms, 12*ms + 10}, cpu: []int64{0, 10, 20, 3*ms + 20, 3*ms + 30}}
	stolen := l.unsteal()
	want := []int64{0, 10, 20, int64(stolenStep) + 20, int64(stolenStep) + 30}
	if stolen != 3*ms-int64(stolenStep) || !slices.Equal(l.cpu, want) {
		t.Errorf("unsteal: %d ns taken out, CPU clock %v; want %d, %v", stolen, l.cpu, 3*ms-int64(stolenStep), want)
	}
}

// count returns how many of times fall in the burn.
func (l burnLog) count(times []int64) int {
	n := 0
	for _, at := range times {
		if at >= l.wall[0] && at <= l.wall[len(l.wall)-1] {
			n++
		}
	}
	return n
}

// cpuIdle returns the machine's idle and total time so far, in ticks,
// from /proc/stat.
func cpuIdle(t *testing.T) (idle, total int64) {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i >= 8 { // guest time is counted in user time already
			break
		}
		total += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return idle, total
}

// TestFirstVisit launches testdata/hop.c, which moves to a CPU it has not
// run on and burns 0.5 ms of its CPU time there, 100 times with the perf
// backend at 1 kHz, gprof kept to another CPU: a perfect sampler takes a
// sample in its burn() in half the runs. A launched command is sampled by
// per-CPU events of its cgroup, each with a clock of its own that starts
// when the command first runs on that CPU; started with a whole period,
// such an event took 0.09 samples on average for the 0.5 ms (0.51 for 1
// ms), and a program that ran on many CPUs lost about half a sample on
// each. Pooled, the count must be the CPU time's within 4 sampling errors
// (0.2 samples a run; and 0.1 more over, for the switches and sampling
// that a command's cgroup clock counts beyond its thread's own): 5 sets
// of 60 runs gave -0.14 to +0.00 here, quiet and beside two CPU-bound
// loops; before, -0.34.
func TestFirstVisit(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil || !allowed.IsSet(0) || allowed.Count() < 2 {
		t.Skip("needs CPU 0 and another")
	}
	away := -1
	for cpu := 1; cpu < 1024; cpu++ {
		if allowed.IsSet(cpu) {
			away = cpu
		}
	}
	bin := buildC(t, "hop")
	const runs, ms = 100, 0.5
	interval := time.Millisecond
	var diffs []float64
	for run := range runs {
		out := filepath.Join(t.TempDir(), "p.json.gz")
		r := gprofOnCPU(t, 0, "record", "-q", "-o", out, "--", bin, strconv.FormatFloat(ms, 'f', -1, 64), strconv.Itoa(away))
		skipIfNoPerf(t, r)
		if r.code != 0 {
			t.Fatalf("run %d: gprof record: exit %d: %s", run, r.code, r.stderr)
		}
		if i := strings.Index(r.stderr, "sampling at a fixed interval"); i >= 0 {
			t.Skipf("the perf backend samples a launched command per thread here: %s", strings.SplitN(r.stderr[i:], "\n", 2)[0])
		}
		cpu := workerCPU(t, r.stdout)
		if len(cpu) != 1 {
			t.Fatalf("run %d: hop printed %q", run, r.stdout)
		}
		var want float64
		for _, ns := range cpu {
			want = float64(ns) / float64(interval)
		}
		rep := runReport(t, out)
		got := 0.0
		if f, ok := findFunc(rep.All.TopTotal, "burn"); ok {
			got = math.Round(f.TotalPct * float64(rep.Samples) / 100)
		}
		diffs = append(diffs, got-want)
	}
	mean, sd := meanSD(diffs)
	se := max(sd, 0.3) / math.Sqrt(runs)
	t.Logf("samples in burn() less its CPU time in intervals: mean %+.3f, standard deviation %.2f over %d runs", mean, sd, runs)
	margin(t, "samples a run short of the CPU time's", -mean, 4*se)
	margin(t, "samples a run over the CPU time's", mean, 4*se+0.1)
	if mean < -4*se || mean > 4*se+0.1 {
		t.Errorf("%d runs took %+.3f samples a run beyond their %.1f ms of CPU time on a CPU new to them, want within %.3f (4 sampling errors) to %+.3f", runs, mean, ms, -4*se, 4*se+0.1)
	}
}

// gprofOnCPU runs the gprof under test kept to cpu: the thread that
// starts it is, and a child inherits its thread's CPUs.
func gprofOnCPU(t *testing.T, cpu int, args ...string) result {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		t.Fatal(err)
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	defer unix.SchedSetaffinity(0, &old)
	return gprof(t, args...)
}

func meanSD(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(v)-1))
}
