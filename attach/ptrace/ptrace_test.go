//go:build linux

package ptrace

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/proc"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/event/eventtest"
)

func init() {
	// Launch mode re-executes the running binary as its helper; in tests
	// that binary is the test binary.
	proc.ExecHelperMain()
}

// ptBuild compiles testdata/NAME.c with frame pointers.
func ptBuild(t testing.TB, name string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found; the ptrace tests build their targets with it")
	}
	out := filepath.Join(t.TempDir(), name)
	src := filepath.Join("testdata", name+".c")
	cmd := exec.Command(gcc, "-O0", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", out, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", src, err, b)
	}
	return out
}

// ptStartTarget starts prog and kills it when the test ends.
func ptStartTarget(t testing.TB, prog string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(prog, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		reaped := make(chan struct{})
		go func() {
			cmd.Wait()
			close(reaped)
		}()
		// Bounded: once a loaded run's cleanup waited here until the
		// package's 30-minute timeout, and the test's other target, a
		// busy loop, outlived the test binary. Say what held it.
		select {
		case <-reaped:
		case <-time.After(10 * time.Second):
			t.Errorf("target %d not reaped 10 s after SIGKILL: %s", cmd.Process.Pid, ptThreadStates(cmd.Process.Pid))
		}
	})
	return cmd
}

// ptThreadStates describes each thread of pid: its state, its tracer and
// what it waits in.
func ptThreadStates(pid int) string {
	tids, err := proc.ListTasks(pid)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, tid := range tids {
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
		wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/wchan", pid, tid))
		desc := fmt.Sprintf("thread %d:", tid)
		for _, line := range strings.Split(string(status), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && (k == "State" || k == "TracerPid" || k == "SigPnd" || k == "ShdPnd") {
				desc += fmt.Sprintf(" %s %s", k, strings.TrimSpace(v))
			}
		}
		out = append(out, desc+" wchan "+string(wchan))
	}
	return strings.Join(out, "; ")
}

// ptRequire skips the test if this environment forbids ptrace
// altogether (a seccomp profile, ptrace_scope 3), which is the only reason
// the ptrace tests may not run.
func ptRequire(t testing.TB, pid int) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := ptSeize(pid); err != nil {
		if err == unix.EPERM {
			t.Skipf("ptrace is not permitted here (%v)", ptPermissionError(pid, err))
		}
		t.Fatalf("seize %d: %v", pid, err)
	}
	if err := ptInterrupt(pid); err != nil {
		t.Fatal(err)
	}
	r := ptWaitStop(pid)
	if r.kind != stopped {
		t.Fatalf("probe stop: %+v", r)
	}
	if err := ptDetach(pid, r.sig); err != nil {
		t.Fatal(err)
	}
}

// ptCollected is what a recording handed to its handler, and the
// sampler's statistics.
type ptCollected struct {
	eventtest.Collector
	stats ptStats
}

func ptRecordFor(t testing.TB, d time.Duration, opts attach.Options) (*ptCollected, attach.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	c := &ptCollected{}
	var notices []string
	opts.Notice = func(s string) { notices = append(notices, s) }
	ptStatsHook = func(st ptStats) {
		t.Logf("sampler: %+v", st)
		c.stats = st
	}
	defer func() { ptStatsHook = nil }()
	res, err := recordPtrace(ctx, opts, c.Handle)
	if err != nil {
		t.Fatalf("recordPtrace: %v", err)
	}
	for _, n := range notices {
		t.Logf("notice: %s", n)
	}
	return c, res
}

// ptCheckReleased asserts that no thread of pid is traced or stopped.
func ptCheckReleased(t testing.TB, pid int) {
	t.Helper()
	tids, err := proc.ListTasks(pid)
	if err != nil {
		t.Fatalf("target %d is gone: %v", pid, err)
	}
	for _, tid := range tids {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimSpace(v)
			switch k {
			case "TracerPid":
				if v != "0" {
					t.Errorf("thread %d is still traced by %s", tid, v)
				}
			case "State":
				if strings.HasPrefix(v, "t") || strings.HasPrefix(v, "T") {
					t.Errorf("thread %d is left stopped: %s", tid, v)
				}
			}
		}
	}
}

// ptRuntimeOf returns the CPU time of pid's threads in ns.
func ptRuntimeOf(pid int) int64 {
	tids, _ := proc.ListTasks(pid)
	var sum int64
	for _, tid := range tids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid))
		f := strings.Fields(string(b))
		if len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			sum += n
		}
	}
	return sum
}

func ptMapsOf(t testing.TB, pid int) []ptRange {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	var rs []ptRange
	for _, line := range strings.Split(string(data), "\n") {
		if r, ok := parseRange([]byte(line)); ok {
			rs = append(rs, r)
		}
	}
	return rs
}

func TestPtraceAttachBusy(t *testing.T) {
	prog := ptBuild(t, "busy")
	cmd := ptStartTarget(t, prog)
	pid := cmd.Process.Pid
	time.Sleep(100 * time.Millisecond) // let the worker start
	ptRequire(t, pid)

	const interval = 10 * time.Millisecond
	const dur = 1500 * time.Millisecond
	cpuBefore := ptRuntimeOf(pid)
	tids, _ := proc.ListTasks(pid)
	if len(tids) != 2 {
		t.Fatalf("target has threads %v, want 2", tids)
	}
	ranBefore := map[int]int64{}
	for _, tid := range tids {
		ranBefore[tid] = ptThreadRuntime(pid, tid)
	}
	c, res := ptRecordFor(t, dur, attach.Options{Pids: []int{pid}, Interval: interval})
	cpuUsed := ptRuntimeOf(pid) - cpuBefore
	ptCheckReleased(t, pid)
	if res.Backend != "ptrace" || res.Event != "ptrace-timer" {
		t.Errorf("result names %q/%q", res.Backend, res.Event)
	}

	// Both threads burn CPU all the time, so each is sampled about once
	// per interval of its CPU time (see TestPtraceWaitingThread): on an
	// idle machine at nearly every tick, on a loaded one less often, as the
	// threads wait for a CPU. Some of the ticks that find a thread running
	// are lost, when the thread is on the sampler's CPU but was not taken
	// off it by the sampler; beside four CPU-bound loops on 2 CPUs (load
	// 6) a thread got 9 samples for 50 intervals of its CPU time, so an
	// eighth of the intervals is the least.
	ticks := c.stats.ticks
	if ticks < 5 {
		t.Errorf("only %d ticks in %v at %v", ticks, dur, interval)
	}
	per := c.PerThread()
	for _, tid := range tids {
		ran := time.Duration(ptThreadRuntime(pid, tid) - ranBefore[tid])
		t.Logf("thread %d: %d samples in %d ticks, for %v of CPU", tid, per[tid], ticks, ran)
		if per[tid] < int(ran/interval)/8 || per[tid] > ticks {
			t.Errorf("thread %d: %d samples in %d ticks for %v of CPU, want %d to %d", tid, per[tid], ticks, ran, int(ran/interval)/8, ticks)
		}
	}

	// The binary's executable mapping was reported, with map_files.
	var text *event.Map
	for i, m := range c.Maps {
		if m.Path == prog {
			text = &c.Maps[i]
		}
	}
	if text == nil {
		t.Fatalf("no executable Map for %s in %d maps", prog, len(c.Maps))
	}
	if text.MapFile == "" || text.Inode == 0 {
		t.Errorf("binary's Map lacks MapFile or Inode: %+v", *text)
	}
	names := map[string]bool{}
	for _, cm := range c.Comms {
		names[cm.Name] = true
		if cm.Tid == pid && (len(cm.Argv) == 0 || cm.Argv[0] != prog) {
			t.Errorf("main thread's Comm has argv %q", cm.Argv)
		}
	}
	if !names["busy-worker"] {
		t.Errorf("thread names %v lack busy-worker", names)
	}

	// Registers and stack: the IP is in the binary (spin's loop), the SP
	// inside a mapping, and the frame pointer chain in the copied stack
	// leads to a return address in the binary.
	all := ptMapsOf(t, pid)
	inText := func(a uint64) bool { return a >= text.Start && a < text.End }
	var ipOK, spOK, retOK int
	var cpuSum int64
	for _, s := range c.Samples {
		if s.Regs == nil || len(s.Stack) != 1 || s.Stack[0] != s.Regs.IP {
			t.Fatalf("sample without registers or with stack %x", s.Stack)
		}
		cpuSum += s.CPUDelta
		if inText(s.Regs.IP) {
			ipOK++
		}
		if _, ok := findRange(all, s.Regs.SP); ok {
			spOK++
		}
		if off := s.Regs.FP + 8 - s.Regs.SP; s.Regs.FP >= s.Regs.SP && off+8 <= uint64(len(s.StackCopy)) {
			if inText(binary.LittleEndian.Uint64(s.StackCopy[off:])) {
				retOK++
			}
		}
		if len(s.StackCopy) == 0 || len(s.StackCopy) > 16384 {
			t.Errorf("stack copy of %d bytes", len(s.StackCopy))
		}
	}
	n := len(c.Samples)
	t.Logf("%d samples: IP in binary %d, SP mapped %d, FP return address in binary %d", n, ipOK, spOK, retOK)
	if n == 0 || ipOK < n*8/10 || spOK != n || retOK < n*8/10 {
		t.Errorf("registers or stacks look wrong")
	}
	// The samples' CPU deltas account for the CPU time the threads used
	// up to their last samples.
	// When the machine is so loaded that ticks come far apart, much of
	// the CPU time falls after the last samples.
	t.Logf("samples account for %v of the %v of CPU used", time.Duration(cpuSum), time.Duration(cpuUsed))
	if cpuSum > cpuUsed || ticks > int(dur/interval)/2 && cpuSum < cpuUsed/2 {
		t.Errorf("samples account for %v of %v of CPU time", time.Duration(cpuSum), time.Duration(cpuUsed))
	}
}

// ptLoop starts a CPU-bound shell loop for the rest of the test.
func ptLoop(t testing.TB) {
	t.Helper()
	ptStartTarget(t, "sh", "-c", "while :; do :; done")
}

// TestPtraceSampleRate: a busy thread gets a sample per interval of its
// CPU time, as perf's CPU clock gives, at 100 Hz and at the backend's cap,
// on a quiet machine and beside a CPU-bound loop; and every stop is sent
// by the stopper of the thread's own CPU, which is what makes that hold
// where a stop sent to another CPU waits for that CPU's next timer tick
// (some VMs): the stoppers ticked and stopped on their own CPUs only.
func TestPtraceSampleRate(t *testing.T) {
	prog := ptBuild(t, "busy")
	for _, load := range []string{"quiet", "beside a loop"} {
		for _, interval := range []time.Duration{10 * time.Millisecond, time.Millisecond} {
			t.Run(fmt.Sprintf("%s/%v", load, interval), func(t *testing.T) {
				if load != "quiet" {
					ptLoop(t)
				}
				cmd := ptStartTarget(t, prog)
				pid := cmd.Process.Pid
				time.Sleep(50 * time.Millisecond)
				ptRequire(t, pid)
				tids, _ := proc.ListTasks(pid)
				before := map[int]int64{}
				for _, tid := range tids {
					before[tid] = ptThreadRuntime(pid, tid)
				}
				c, _ := ptRecordFor(t, 2*time.Second, attach.Options{Pids: []int{pid}, Interval: interval})
				ptCheckReleased(t, pid)
				per := c.PerThread()
				for _, tid := range tids {
					// The CPU time the samples carry: the thread's time
					// from the recording's start to its last sample.
					var cpu int64
					for _, sm := range c.Samples {
						if sm.Tid == tid {
							cpu += sm.CPUDelta
						}
					}
					ran := time.Duration(ptThreadRuntime(pid, tid) - before[tid])
					want := float64(cpu) / float64(interval)
					ratio := float64(per[tid]) / want
					t.Logf("thread %d: %d samples for %v of CPU (%v in samples, %v in all): ratio %.3f", tid, per[tid], time.Duration(cpu), time.Duration(cpu), ran, ratio)
					margin(t, "samples per interval of CPU", ratio, 0.9)
					// A sample per interval of CPU time, to within what a
					// credit of half an interval either way and a thread's
					// first and last sample leave (one sample).
					if want >= 50 && ((float64(per[tid])+1)/want < 0.9 || (float64(per[tid])-1)/want > 1.1) {
						t.Errorf("thread %d: %d samples for %.0f intervals of CPU (%.3f), want 0.9 to 1.1", tid, per[tid], want, ratio)
					}
					if time.Duration(cpu) < ran/2 {
						t.Errorf("thread %d: samples carry %v of its %v of CPU", tid, time.Duration(cpu), ran)
					}
				}
				if c.stats.unpinned == 0 && c.stats.remote != 0 {
					t.Errorf("%d stops were sent to a thread on another CPU", c.stats.remote)
				}
			})
		}
	}
}

// margin logs a checked figure beside its bound.
func margin(t testing.TB, what string, got, bound float64) {
	t.Helper()
	t.Logf("margin: %s %.3f (bound %.3f)", what, got, bound)
}

// TestPtraceWaitingThread: a thread that is runnable but waiting for a CPU
// has not moved since its previous stop, so stopping it again only repeats
// that sample. Here the target shares one CPU, at nice 19, with a busy
// process at nice 0, so it runs about 1% of the time, in short slices:
// samples must follow its CPU time (a few per interval of it), not the
// sampler's ticks.
func TestPtraceWaitingThread(t *testing.T) {
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("taskset not found")
	}
	prog := ptBuild(t, "busy")
	hog := ptStartTarget(t, "taskset", "-c", "0", prog)
	cmd := ptStartTarget(t, "taskset", "-c", "0", "nice", "-n", "19", prog)
	pid := cmd.Process.Pid
	time.Sleep(200 * time.Millisecond) // let both exec and start their workers
	ptRequire(t, pid)
	_ = hog

	const interval = time.Millisecond
	tids, _ := proc.ListTasks(pid)
	before := map[int]int64{}
	slices := map[int]int64{}
	for _, tid := range tids {
		before[tid] = ptThreadRuntime(pid, tid)
		slices[tid] = ptThreadSlices(pid, tid)
	}
	const dur = 2 * time.Second
	c, _ := ptRecordFor(t, dur, attach.Options{Pids: []int{pid}, Interval: interval})
	ptCheckReleased(t, pid)
	// Nor may the sampler wait for the thread to get a CPU: that takes
	// tens of milliseconds here, and more on a busy machine.
	if want := int(dur/interval) / 10; c.stats.ticks < want {
		t.Errorf("%d ticks in %v at %v, want at least %d: the sampler waits for threads that wait for a CPU", c.stats.ticks, dur, interval, want)
	}
	per := c.PerThread()
	for _, tid := range tids {
		ran := time.Duration(ptThreadRuntime(pid, tid) - before[tid])
		// A sample per interval of its CPU time, as for any thread (its
		// stopper samples it when its credit of CPU time says so), give
		// or take a few for the slices the recording starts and ends in.
		// Sampled at every tick it waits, it would have hundreds.
		limit := 2*int(ran/interval) + 10
		t.Logf("thread %d: %d samples for %v of CPU, %d slices", tid, per[tid], ran, ptThreadSlices(pid, tid)-slices[tid])
		if per[tid] > limit {
			t.Errorf("thread %d: %d samples for %v of CPU at %v, want at most %d", tid, per[tid], ran, interval, limit)
		}
	}
}

// ptThreadSlices returns how many times a thread has been put on a CPU.
func ptThreadSlices(pid, tid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid))
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0
	}
	n, _ := strconv.ParseInt(f[2], 10, 64)
	return n
}

// ptThreadRuntime returns one thread's CPU time in ns.
func ptThreadRuntime(pid, tid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid))
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return n
}

func TestPtraceNewThread(t *testing.T) {
	prog := ptBuild(t, "late")
	cmd := ptStartTarget(t, prog, "300")
	pid := cmd.Process.Pid
	time.Sleep(20 * time.Millisecond)
	ptRequire(t, pid)
	c, _ := ptRecordFor(t, 1200*time.Millisecond, attach.Options{Pids: []int{pid}, Interval: 5 * time.Millisecond})
	ptCheckReleased(t, pid)

	var late int
	for _, f := range c.Forks {
		if f.Pid == pid && f.Tid != pid {
			late = f.Tid
		}
	}
	if late == 0 {
		t.Fatalf("no Fork for the late thread: %+v", c.Forks)
	}
	per := c.PerThread()
	// It burns CPU all the time: sampled about once per interval of that
	// (see TestPtraceAttachBusy).
	ran := time.Duration(ptThreadRuntime(pid, late))
	t.Logf("late thread %d: %d samples for %v of CPU; main thread %d: %d", late, per[late], ran, pid, per[pid])
	if want := int(ran/(5*time.Millisecond)) / 4; per[late] < max(want, 1) {
		t.Errorf("late thread sampled %d times for %v of CPU, want at least %d", per[late], ran, max(want, 1))
	}
	// The main thread sleeps in pthread_join and must be left alone.
	if per[pid] > 3 {
		t.Errorf("sleeping main thread sampled %d times", per[pid])
	}
	named := false
	for _, cm := range c.Comms {
		named = named || cm.Tid == late && cm.Name == "late"
	}
	if !named {
		t.Errorf("no Comm naming the late thread: %+v", c.Comms)
	}
}

func TestPtraceLaunch(t *testing.T) {
	prog := ptBuild(t, "busy")
	c, res := ptRecordFor(t, 30*time.Second, attach.Options{Command: []string{prog, "0.4", "7"}, Interval: 5 * time.Millisecond})
	if res.ExitCode != 7 {
		t.Errorf("exit code %d, want 7", res.ExitCode)
	}
	// 0.4s of two busy threads at 200 Hz; a loaded machine gets far fewer.
	if len(c.Samples) < 5 {
		t.Errorf("%d samples", len(c.Samples))
	}
	if len(c.Comms) == 0 || !c.Comms[0].Exec || len(c.Comms[0].Argv) != 3 {
		t.Errorf("first Comm %+v, want the exec'd command", c.Comms)
	}
	pid := c.Samples[0].Pid
	exited := false
	for _, e := range c.Exits {
		exited = exited || e.Tid == pid
	}
	if !exited {
		t.Errorf("no Exit for the process: %+v", c.Exits)
	}
	for _, s := range c.Samples {
		if s.Pid != pid {
			t.Errorf("sample of pid %d, want %d", s.Pid, pid)
		}
	}
}

func TestPtraceLaunchKilled(t *testing.T) {
	// A command killed by a signal reports 128+signal; the sampler's own
	// wait4 may be the one that reaps it.
	c, res := ptRecordFor(t, 30*time.Second, attach.Options{Command: []string{"sh", "-c", "kill -9 $$"}, Interval: time.Millisecond})
	if res.ExitCode != 128+9 {
		t.Errorf("exit code %d, want 137 (events %d)", res.ExitCode, len(c.Comms))
	}
}

func TestPtraceNoSuchProcess(t *testing.T) {
	cmd := exec.Command("true")
	cmd.Run()
	_, err := recordPtrace(context.Background(), attach.Options{Pids: []int{cmd.Process.Pid}}, func(event.Event) {})
	if !errors.Is(err, attach.ErrNoSuchProcess) {
		t.Errorf("got %v, want ErrNoSuchProcess", err)
	}
}

const ptKillDriverEnv = "GPROF_PTRACE_KILL_DRIVER"

// TestPtraceKillDriver is not a test: TestPtraceSurvivesSIGKILL runs the
// test binary with this test selected to get a process that samples the
// pid in the environment until it is killed.
func TestPtraceKillDriver(t *testing.T) {
	pid, err := strconv.Atoi(os.Getenv(ptKillDriverEnv))
	if err != nil {
		t.Skip("helper for TestPtraceSurvivesSIGKILL")
	}
	started := false
	recordPtrace(context.Background(), attach.Options{Pids: []int{pid}, Interval: time.Millisecond}, func(e event.Event) {
		if _, ok := e.(*event.Sample); ok && !started {
			started = true
			fmt.Println("sampling")
		}
	})
	os.Exit(3)
}

func TestPtraceSurvivesSIGKILL(t *testing.T) {
	prog := ptBuild(t, "busy")
	target := ptStartTarget(t, prog)
	pid := target.Process.Pid
	time.Sleep(50 * time.Millisecond)
	ptRequire(t, pid)

	// Kill several drivers at different moments; at 1000 samples a second
	// of two threads, most moments are within a stop or a seize.
	for i := range 5 {
		drv := exec.Command(os.Args[0], "-test.run=^TestPtraceKillDriver$", "-test.v")
		drv.Env = append(os.Environ(), ptKillDriverEnv+"="+strconv.Itoa(pid))
		out, err := drv.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := drv.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			if sc.Text() == "sampling" {
				ok = true
				break
			}
		}
		if !ok {
			drv.Process.Kill()
			drv.Wait()
			t.Fatal("driver did not start sampling")
		}
		time.Sleep(time.Duration(20+i*37) * time.Millisecond)
		drv.Process.Signal(syscall.SIGKILL)
		drv.Wait()

		// The kernel detaches a dead tracer's tracees as it exits; the
		// target must be running freely right away.
		ptCheckReleased(t, pid)
		before := ptRuntimeOf(pid)
		time.Sleep(200 * time.Millisecond)
		if after := ptRuntimeOf(pid); after == before {
			t.Errorf("round %d: target did not run in the 200ms after the kill", i)
		}
	}
	ptCheckReleased(t, pid)
}

// BenchmarkPtraceSample measures a stopper ticking at 1 kHz on a CPU
// where two busy threads take turns: the looks at their /proc files,
// seize, interrupt, wait, registers, up to 16 KiB of stack, detach.
// µs/sample is the stopper's time per sample (its ticks, sleeps between
// looks included), pause-µs/sample how long a thread was held (from the
// interrupt to the detach), samples/op the samples per tick (one of the
// two threads runs at each tick).
func BenchmarkPtraceSample(b *testing.B) {
	if _, err := exec.LookPath("taskset"); err != nil {
		b.Skip("taskset not found")
	}
	prog := ptBuild(b, "busy")
	cmd := ptStartTarget(b, "taskset", "-c", "0", prog)
	pid := cmd.Process.Pid
	time.Sleep(100 * time.Millisecond)
	ptRequire(b, pid)

	s := &ptSampler{procs: map[int]*ptProc{}, pending: map[int]bool{}, buf: make([]byte, 4096),
		h: func(event.Event) {}, interval: time.Millisecond, stackSize: 16384, byCPU: []int{0}}
	var stop atomic.Bool
	w := newWorker(s, 0, 0, &stop)
	s.workers = []*worker{w}
	s.addProcess(pid, 0, false)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore, pinned := w.pin()
	defer restore()
	if !pinned {
		b.Skip("cannot pin to CPU 0")
	}
	var bytes int
	var busy time.Duration
	var entries []*entry
	b.ResetTimer()
	next := time.Now()
	for i := 0; i < b.N; i++ {
		w.sleepUntil(next)
		next = next.Add(time.Millisecond)
		t0 := time.Now()
		w.tick(next)
		busy += time.Since(t0)
		entries = w.ring.pending(entries[:0])
		for _, e := range entries {
			bytes += len(e.stack)
		}
		w.ring.consume(len(entries))
	}
	b.StopTimer()
	w.collect(time.Now().Add(ptDrainLimit))
	n := float64(max(w.stats.samples, 1))
	b.ReportMetric(float64(bytes)/n, "stackbytes/sample")
	b.ReportMetric(float64(busy.Microseconds())/n, "µs/sample")
	b.ReportMetric(float64(w.stats.paused.Microseconds())/n, "pause-µs/sample")
	b.ReportMetric(float64(w.stats.samples)/float64(b.N), "samples/op")
	b.Logf("stop latency: %v", w.stats.latency)
	ptCheckReleased(b, pid)
}

func TestPtraceKeepsSignals(t *testing.T) {
	prog := ptBuild(t, "signals")
	cmd := exec.Command(prog)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	var sig int
	if !sc.Scan() {
		t.Fatal("target did not start")
	}
	if _, err := fmt.Sscanf(sc.Text(), "ready %d", &sig); err != nil {
		t.Fatalf("target said %q", sc.Text())
	}
	pid := cmd.Process.Pid
	ptRequire(t, pid)

	// Signals that arrive while a thread is seized overtake the interrupt
	// and must be handed back on detach.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan ptStats, 1)
	go func() {
		var st ptStats
		ptStatsHook = func(s ptStats) { st = s }
		_, err := recordPtrace(ctx, attach.Options{Pids: []int{pid}, Interval: time.Millisecond}, func(event.Event) {})
		ptStatsHook = nil
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	time.Sleep(50 * time.Millisecond)
	// As fast as possible, so that some arrive between seize and interrupt.
	// sigqueue, unlike kill, refuses a signal when the queue is full
	// instead of merging it with a pending one, so every accepted signal
	// must reach the handler.
	n := 0
	for start := time.Now(); time.Since(start) < time.Second; {
		if ptSigqueue(pid, sig) == nil {
			n++
		}
	}
	cancel()
	st := <-done
	ptCheckReleased(t, pid)
	// Let the target handle what is still queued: SIGTERM, being a lower
	// number, would be delivered first.
	for start := time.Now(); ptSignalsPending(pid) && time.Since(start) < 10*time.Second; {
		time.Sleep(10 * time.Millisecond)
	}
	unix.Kill(pid, unix.SIGTERM)
	if !sc.Scan() {
		t.Fatal("target did not report its count")
	}
	got, _ := strconv.Atoi(strings.TrimSpace(sc.Text()))
	t.Logf("%d samples, %d with a signal handed back; target received %d of %d signals", st.samples, st.signals, got, n)
	if got != n {
		t.Errorf("target received %d signals, want %d", got, n)
	}
}

// ptSignalsPending reports whether any thread of pid, or the process, has
// signals pending.
func ptSignalsPending(pid int) bool {
	tids, _ := proc.ListTasks(pid)
	for _, tid := range tids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			if (k == "SigPnd" || k == "ShdPnd") && strings.Trim(v, " \t0") != "" {
				return true
			}
		}
	}
	return false
}

// ptSigqueue sends sig to pid with code SI_QUEUE, as sigqueue(3) does.
func ptSigqueue(pid, sig int) error {
	var info [128]byte
	binary.NativeEndian.PutUint32(info[0:], uint32(sig))
	binary.NativeEndian.PutUint32(info[8:], uint32(0xffffffff)) // SI_QUEUE
	binary.NativeEndian.PutUint32(info[16:], uint32(os.Getpid()))
	binary.NativeEndian.PutUint32(info[20:], uint32(os.Getuid()))
	_, _, e := unix.Syscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(pid), uintptr(sig), uintptr(unsafe.Pointer(&info)))
	if e != 0 {
		return e
	}
	return nil
}

func TestPtraceLeavesJobControlStop(t *testing.T) {
	prog := ptBuild(t, "busy")
	cmd := ptStartTarget(t, prog)
	pid := cmd.Process.Pid
	time.Sleep(50 * time.Millisecond)
	ptRequire(t, pid)

	// A target stopped by SIGSTOP in the middle of sampling must stay
	// stopped afterwards, untraced, and continue on SIGCONT.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		recordPtrace(ctx, attach.Options{Pids: []int{pid}, Interval: time.Millisecond}, func(event.Event) {})
	}()
	time.Sleep(100 * time.Millisecond)
	unix.Kill(pid, unix.SIGSTOP)
	time.Sleep(100 * time.Millisecond)
	cancel()
	<-done
	tids, _ := proc.ListTasks(pid)
	for _, tid := range tids {
		if st := ptState(pid, tid); st != "T" {
			t.Errorf("thread %d in state %q after SIGSTOP, want T", tid, st)
		}
		if tr := tracerPid(tid); tr != 0 {
			t.Errorf("thread %d traced by %d", tid, tr)
		}
	}
	unix.Kill(pid, unix.SIGCONT)
	time.Sleep(50 * time.Millisecond)
	ptCheckReleased(t, pid)
}

func ptState(pid, tid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	st, _, _, _ := parseStat(b)
	return string(st)
}

func TestPtraceFollowsChildren(t *testing.T) {
	prog := ptBuild(t, "busy")
	// The shell forks busy after a while; the trailing command keeps it
	// from exec'ing busy in its own place, and keeps it alive until its
	// /proc stat (its waited-for children's CPU time) is read: with
	// "true" instead, on a loaded machine it had exited by then.
	cmd := ptStartTarget(t, "sh", "-c", "sleep 0.3; "+prog+" 0.6; sleep 30")
	pid := cmd.Process.Pid
	ptRequire(t, pid)
	c, _ := ptRecordFor(t, 1500*time.Millisecond, attach.Options{Pids: []int{pid}, Interval: 5 * time.Millisecond})

	// The shell forks three children (the sleeps and busy): busy is the
	// one that mapped prog.
	var child int
	for _, f := range c.Forks {
		if f.Ppid == pid && f.Pid != pid {
			for _, m := range c.Maps {
				if m.Pid == f.Pid && m.Path == prog {
					child = f.Pid
				}
			}
		}
	}
	if child == 0 {
		t.Fatalf("no Fork of a child of %d that maps busy: %+v", pid, c.Forks)
	}
	var n int
	for _, s := range c.Samples {
		if s.Pid == child {
			n++
		}
	}
	var exited bool
	for _, e := range c.Exits {
		exited = exited || e.Pid == child && e.Tid == child
	}
	// The shell has waited for the child by now, so its children's CPU
	// time is the child's; sampled about once per interval of it (see
	// TestPtraceAttachBusy).
	ran := ptChildrenCPU(t, pid)
	want := max(int(ran/(5*time.Millisecond))/4, 1)
	t.Logf("child %d: %d samples for %v of CPU", child, n, ran)
	if n < want || !exited {
		t.Errorf("child %d: %d samples for %v of CPU (want at least %d), Exit %v", child, n, ran, want, exited)
	}
}

// ptChildrenCPU returns the CPU time of pid's children that it waited for,
// from /proc/PID/stat (cutime and cstime, in clock ticks of 10ms).
func ptChildrenCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	for range 100 { // the shell waits for its child soon after it exits
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		cu, _ := strconv.Atoi(f[13])
		cs, _ := strconv.Atoi(f[14])
		if cu+cs > 0 {
			return time.Duration(cu+cs) * 10 * time.Millisecond
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0
}

const ptPermDriverEnv = "GPROF_PTRACE_PERM_DRIVER"

// TestPtracePermDriver is not a test: TestPtracePermission runs a copy of
// the test binary as nobody with this test selected.
func TestPtracePermDriver(t *testing.T) {
	pid, err := strconv.Atoi(os.Getenv(ptPermDriverEnv))
	if err != nil {
		t.Skip("helper for TestPtracePermission")
	}
	_, err = recordPtrace(context.Background(), attach.Options{Pids: []int{pid}}, func(event.Event) {})
	fmt.Printf("permission=%v\n%v\n", errors.Is(err, attach.ErrPermission), err)
	os.Exit(0)
}

func TestPtracePermission(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process as another user")
	}
	// A copy of the test binary that user nobody can execute.
	dir, err := os.MkdirTemp("", "gprof-ptrace-perm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "attach.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	target := ptStartTarget(t, "sleep", "30")
	drv := exec.Command(bin, "-test.run=^TestPtracePermDriver$")
	drv.Dir = dir
	drv.Env = append(os.Environ(), ptPermDriverEnv+"="+strconv.Itoa(target.Process.Pid))
	drv.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := drv.CombinedOutput()
	if err != nil {
		t.Fatalf("driver: %v\n%s", err, out)
	}
	t.Logf("as nobody: %s", out)
	if !strings.HasPrefix(string(out), "permission=true") || !strings.Contains(string(out), "cap_sys_ptrace") {
		t.Errorf("attaching to root's process as nobody gave %s", out)
	}
}
