//go:build linux

package e2e

// Fault tests (issue 5): gprof killed or interrupted mid-recording, targets
// that exit, exec, fork or spawn hundreds of threads, libraries and
// binaries that vanish, processes that are gone before attach, two
// profilers on one process, a full disk, and corrupt input files. Each
// fault gets one clear "gprof: error:" line where it is an error, loses no
// data where it is not, and the target always carries on unharmed. They
// use the harness (harness_test.go: gprof, startGprof, startSpin,
// assertUnharmed) and build their C programs from testdata/fault.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/profile"
)

// buildFault compiles testdata/fault/NAME.c once per test binary run.
func buildFault(t *testing.T, name string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed (./test.sh installs it)")
	}
	out := filepath.Join(fixtures, "fault-"+name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	args := append([]string{"-O2", "-g", "-pthread", "-o", out, filepath.Join("testdata", "fault", name+".c")}, flags...)
	if b, err := rootCommand("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", name, err, b)
	}
	return out
}

// goneWithin reports whether pid has exited (and been reaped, or is a
// zombie) within d.
func goneWithin(pid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); ; {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X') {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFaultSIGKILL kills gprof with SIGKILL mid-recording, which it cannot
// catch. Attached targets carry on: perf events die with their file
// descriptors, and the kernel detaches ptrace tracees of a dead tracer
// (gprof never sets PTRACE_O_EXITKILL, and traces a thread only for the
// microseconds of a sample). Several kills at different moments give the
// ptrace backend chances to die while a thread is seized. Nothing is
// written: no profile and no temporary file.
//
// A launched command lives within its recording, even one that ends by
// SIGKILL: the kernel sends it SIGKILL as its parent dies (a parent-death
// signal set by the launch helper, see attach/internal/proc/launch.go), so
// it is gone within a moment, not orphaned.
func TestFaultSIGKILL(t *testing.T) {
	for _, be := range backends {
		t.Run(be+"/attach", func(t *testing.T) {
			spin := startSpin(t)
			pid := spin.Process.Pid
			dir := t.TempDir()
			for i, delay := range []time.Duration{300, 170, 230} {
				out := filepath.Join(dir, fmt.Sprintf("k%d.json.gz", i))
				g := startGprof(t, nil, "record", "-q", "--backend", be, "-p", strconv.Itoa(pid), "-o", out)
				if g.exited(delay * time.Millisecond) {
					skipIfNoBackend(t, g.stderr.String())
					t.Fatalf("gprof ended by itself: %s", g.stderr.String())
				}
				g.cmd.Process.Signal(syscall.SIGKILL)
				<-g.done
				assertUnharmed(t, pid)
			}
			if names := dirNames(t, dir); len(names) != 0 {
				t.Errorf("files left behind by killed gprofs: %v", names)
			}
		})
		t.Run(be+"/launch", func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "k.json.gz")
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			// Not spin: it sets a parent-death signal of its own.
			g := startGprof(t, pw, "record", "-q", "--backend", be, "-o", out, "--", "sh", "-c", "echo ready; exec sleep 60")
			pw.Close()
			line, _ := bufio.NewReader(pr).ReadString('\n')
			if strings.TrimSpace(line) != "ready" {
				<-g.done
				skipIfNoBackend(t, g.stderr.String())
				t.Fatalf("launched command said %q; gprof: %s", line, g.stderr.String())
			}
			kids := childrenOf(g.cmd.Process.Pid)
			if len(kids) != 1 {
				t.Fatalf("gprof has children %v, want the launched command alone", kids)
			}
			child := kids[0]
			t.Cleanup(func() { killAndForget(child) })
			time.Sleep(300 * time.Millisecond)
			g.cmd.Process.Signal(syscall.SIGKILL)
			<-g.done
			if !goneWithin(child, 2*time.Second) {
				states, _ := procState(t, child)
				t.Errorf("the launched command (pid %d, parent %d, states %q) outlived the killed gprof", child, parentOf(child), states)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a killed gprof wrote %s", out)
			}
		})
	}
}

// attachedShare is the least share of a worker's CPU milliseconds a
// profile attached with -p must hold as samples (one per millisecond at
// the default rate): the worker runs before the attach. Both backends
// sample a thread per interval of its CPU time. (ptrace once needed 0.25:
// its stops of threads waiting for a CPU were no samples, so under load it
// took fewer, 165 for 504 ms beside three CPU-bound loops.)
func attachedShare(backend string) float64 {
	return 0.5
}

// TestFaultTargetExits attaches to a process that exits on its own while
// recorded: the recording ends by itself, exit 0, with a valid profile
// that holds the process's work and its exit.
func TestFaultTargetExits(t *testing.T) {
	bin := buildC(t, "split")
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			target := exec.Command(bin, "1", "0.5")
			var tout bytes.Buffer
			target.Stdout = &tout
			if err := target.Start(); err != nil {
				t.Fatal(err)
			}
			reaped := make(chan struct{})
			go func() { target.Wait(); close(reaped) }() // reap it, as a parent should
			t.Cleanup(func() { target.Process.Kill(); <-reaped })
			out := filepath.Join(t.TempDir(), "x.json.gz")
			start := time.Now()
			r := mustRecord(t, "-q", "--backend", be, "-p", strconv.Itoa(target.Process.Pid), "-o", out)
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("recording took %v after its only target exited", el)
			}
			<-reaped
			p := r.profile
			if len(p.Processes) != 1 || p.Processes[0].End < 0 {
				t.Errorf("want one process with its exit recorded, got %d processes", len(p.Processes))
			}
			cpu := workerCPU(t, tout.String())
			by := samplesByTid(p)
			for tid, ns := range cpu {
				margin(t, be+" samples per CPU ms", float64(by[tid])/(float64(ns)/1e6), attachedShare(be))
				if want := float64(ns) / 1e6; float64(by[tid]) < attachedShare(be)*want {
					t.Errorf("worker %d: %d samples for %.0f ms of CPU", tid, by[tid], want)
				}
			}
		})
	}
}

// checkExecSplit checks a profile of a program that became split by exec:
// the pre-exec functions belong to a process named before, split's to
// processes named split, and no thread of one has the other's code.
func checkExecSplit(t *testing.T, out, before, beforeFn string) {
	t.Helper()
	rep := reportThreads(t, out)
	for _, th := range rep.Threads {
		for _, f := range th.TopSelf {
			if th.ProcessName != "split" && f.Lib == "split" {
				t.Errorf("%s (%d samples, lib split) attributed to process %q pid %d tid %d", f.Name, f.SelfSamples, th.ProcessName, th.Pid, th.Tid)
			}
			if th.ProcessName == "split" && before != "" && f.Lib == before {
				t.Errorf("%s (lib %s) attributed to process split pid %d", f.Name, f.Lib, th.Pid)
			}
		}
	}
	if before != "" {
		if n := rep.selfSamples(before, beforeFn); n < 100 {
			t.Errorf("%s has %d samples in process %s before the exec", beforeFn, n, before)
		}
	}
	var work int64
	for _, fn := range []string{"work_a", "work_b", "work_c"} {
		work += rep.selfSamples("split", fn)
	}
	margin(t, "work after exec", float64(work), 100)
	if work < 100 {
		t.Errorf("only %d samples of split's work functions after the exec", work)
	}
}

// TestFaultExec: a target that execs another program mid-recording. The
// samples after the exec belong to the new program, under its name and
// its binary, and those before to the old one. Launched: a shell that runs
// split and then execs into split. Attached: execer, which burns CPU and
// then execs split.
func TestFaultExec(t *testing.T) {
	bin := buildC(t, "split")
	t.Run("launch", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "e.json.gz")
		r := mustRecord(t, "-q", "-o", out, "--", "sh", "-c", bin+" 1 0.3; exec "+bin+" 1 0.3")
		p := r.profile
		by := samplesByTid(p)
		for tid, ns := range workerCPU(t, r.stdout) {
			margin(t, "split worker samples per CPU ms", float64(by[tid])/(float64(ns)/1e6), 0.8)
			if want := float64(ns) / 1e6; float64(by[tid]) < 0.8*want {
				t.Errorf("split worker %d: %d samples for %.0f ms of CPU", tid, by[tid], want)
			}
		}
		splits := 0
		for _, proc := range p.Processes {
			if proc.Name == "split" {
				splits++
			}
		}
		if splits != 2 {
			t.Errorf("%d processes named split, want 2 (the child, and the shell after its exec)", splits)
		}
		checkExecSplit(t, out, "", "")
	})
	execer := buildFault(t, "execer")
	for _, be := range backends {
		t.Run("attach/"+be, func(t *testing.T) {
			target := exec.Command(execer, "0.4", bin, "split", "1", "0.4")
			var tout bytes.Buffer
			stdout, _ := target.StdoutPipe()
			if err := target.Start(); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(stdout)
			if line, _ := br.ReadString('\n'); strings.TrimSpace(line) != "ready" {
				t.Fatalf("execer said %q", line)
			}
			reaped := make(chan struct{})
			go func() { io.Copy(&tout, br); target.Wait(); close(reaped) }()
			t.Cleanup(func() { target.Process.Kill(); <-reaped })
			out := filepath.Join(t.TempDir(), "e.json.gz")
			r := mustRecord(t, "-q", "--backend", be, "-p", strconv.Itoa(target.Process.Pid), "-o", out)
			<-reaped
			p := r.profile
			for tid, ns := range workerCPU(t, tout.String()) {
				found := false
				for _, proc := range p.Processes {
					for _, th := range proc.Threads {
						if th.Tid != tid {
							continue
						}
						found = true
						if proc.Name != "split" {
							t.Errorf("split's worker %d is in process %q (pid %d)", tid, proc.Name, proc.Pid)
						}
						margin(t, be+" split worker samples per CPU ms", float64(th.Samples.Len())/(float64(ns)/1e6), attachedShare(be))
						if want := float64(ns) / 1e6; float64(th.Samples.Len()) < attachedShare(be)*want {
							t.Errorf("split worker %d: %d samples for %.0f ms of CPU", tid, th.Samples.Len(), want)
						}
					}
				}
				if !found {
					t.Errorf("split's worker %d is not in the profile", tid)
				}
			}
			checkExecSplit(t, out, filepath.Base(execer), "before_exec")
		})
	}
}

// TestFaultFork: gprof follows processes that an attached process forks
// after the attach (as docs/recording.md says): forker's child is in the profile
// as a process of its own, with its samples, and the parent carries on.
func TestFaultFork(t *testing.T) {
	forker := buildFault(t, "forker")
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			target := exec.Command(forker)
			stdout, _ := target.StdoutPipe()
			if err := target.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { target.Process.Kill(); target.Wait() })
			if line, _ := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != "ready" {
				t.Fatalf("forker said %q", line)
			}
			pid := target.Process.Pid
			go func() {
				time.Sleep(250 * time.Millisecond)
				syscall.Kill(pid, syscall.SIGUSR1)
			}()
			out := filepath.Join(t.TempDir(), "f.json.gz")
			r := mustRecord(t, "-q", "--backend", be, "-d", "1.5", "-p", strconv.Itoa(pid), "-o", out)
			assertUnharmed(t, pid)
			p := r.profile
			var child *profile.Process
			for _, proc := range p.Processes {
				if proc.Pid != pid {
					child = proc
				}
			}
			if len(p.Processes) != 2 || child == nil {
				t.Fatalf("want the parent and its child, got %d processes", len(p.Processes))
			}
			if child.Name != filepath.Base(forker) {
				t.Errorf("child named %q", child.Name)
			}
			rep := reportThreads(t, out)
			// Both backends sample the child from its start (ptrace
			// finds a target's children within ptCoordPeriod).
			min := int64(150)
			margin(t, be+" child_burn samples", float64(rep.selfSamples("", "child_burn")), float64(min))
			if n := rep.selfSamples("", "child_burn"); n < min {
				t.Errorf("child_burn has %d samples; the child burns 400 ms", n)
			}
			for _, th := range rep.Threads {
				if th.Pid == pid && rep.selfSamples("", "parent_burn") < 100 {
					t.Errorf("parent_burn has too few samples")
				}
			}
		})
	}
}

// TestFaultManyThreads: 500 short-lived threads, two at a time, each
// burning 3 ms: every one is in the profile, nearly all with samples,
// nothing is lost at 1 kHz, and the profile loads.
func TestFaultManyThreads(t *testing.T) {
	bin := buildFault(t, "threads")
	out := filepath.Join(t.TempDir(), "t.json.gz")
	r := mustRecord(t, "-q", "--json", "-r", "1000", "-o", out, "--", bin, "500", "2", "3")
	// The command's output comes first on stdout, then gprof's summary.
	i := strings.Index(r.stdout, "{")
	if i < 0 {
		t.Fatalf("no JSON summary in %q", r.stdout)
	}
	var sum struct {
		Lost    uint64 `json:"lost"`
		Threads int    `json:"threads"`
		Samples uint64 `json:"samples"`
	}
	if err := json.Unmarshal([]byte(r.stdout[i:]), &sum); err != nil {
		t.Fatalf("--json: %v", err)
	}
	if sum.Lost != 0 {
		t.Errorf("lost %d events at 1 kHz", sum.Lost)
	}
	cpu := workerCPU(t, r.stdout[:i])
	if len(cpu) != 500 {
		t.Fatalf("threads printed %d workers", len(cpu))
	}
	p := r.profile
	if p.Meta.LostEvents != 0 {
		t.Errorf("profile says %d events lost", p.Meta.LostEvents)
	}
	present := map[int]int{}
	for _, th := range p.Processes[0].Threads {
		present[th.Tid] = th.Samples.Len()
	}
	var missing, empty, got int
	var want float64
	for tid, ns := range cpu {
		n, ok := present[tid]
		switch {
		case !ok:
			missing++
		case n == 0:
			empty++
		}
		got += n
		want += float64(ns) / 1e6
	}
	if missing > 0 {
		t.Errorf("%d of 500 threads are missing from the profile", missing)
	}
	// The kernel samples each thread after every full period of its own
	// CPU time, so a 3 ms thread gets 2 or 3 samples at 1 kHz, seldom
	// fewer: its last partial period is never sampled. Samples are
	// therefore short of CPU time by up to a period per thread, and by
	// the time in the kernel (user mode only is sampled): starting and
	// ending a thread costs some, and threads.c reads its clock seldom
	// so that system calls do not (they took a fifth of the CPU time on a
	// loaded machine when it read it every few µs).
	margin(t, "empty threads", float64(empty), 25)
	margin(t, "thread samples per CPU ms", float64(got)/want, (want-500)/want)
	if empty > 25 {
		t.Errorf("%d of 500 threads that ran 3 ms have no samples", empty)
	}
	if float64(got) < want-500 || float64(got) > 1.1*want {
		t.Errorf("workers have %d samples for %.0f ms of CPU at 1 kHz; want %.0f to %.0f", got, want, want-500, 1.1*want)
	}
}

// TestFaultUnmappedLibrary: dlmain loads a library from a temporary copy,
// burns CPU in it, unloads it and deletes the copy, all while recorded.
// gprof opened the library when it was mapped and keeps it open until the
// end, so the profile still names the library's functions.
func TestFaultUnmappedLibrary(t *testing.T) {
	dlmain := buildFault(t, "dlmain", "-ldl")
	lib := filepath.Join(fixtures, "fault-libdlib.so")
	if _, err := os.Stat(lib); err != nil {
		src := filepath.Join("testdata", "fault", "dlib.c")
		if b, err := rootCommand("gcc", "-O2", "-g", "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
			t.Fatalf("gcc dlib: %v\n%s", err, b)
		}
	}
	dir := t.TempDir()
	copyPath := filepath.Join(dir, "libgone.so")
	out := filepath.Join(dir, "u.json.gz")
	r := mustRecord(t, "-q", "-o", out, "--", dlmain, lib, copyPath, "0.3")
	if strings.TrimSpace(r.stdout) != "unmapped" {
		t.Fatalf("dlmain says %q: the library was not unmapped", r.stdout)
	}
	if _, err := os.Stat(copyPath); err == nil {
		t.Fatal("the library copy still exists")
	}
	rep := reportThreads(t, out)
	margin(t, "dlib_hot samples", float64(rep.selfSamples("", "dlib_hot")), 150)
	if n := rep.selfSamples("", "dlib_hot"); n < 150 {
		t.Errorf("dlib_hot, in the deleted library, has %d samples named; want about 300", n)
	}
	for _, th := range rep.Threads {
		for _, f := range th.TopSelf {
			if f.Name == "dlib_hot" && (!strings.HasPrefix(f.Lib, "libgone.so") || !strings.HasSuffix(f.File, "dlib.c")) {
				t.Errorf("dlib_hot in lib %q file %q", f.Lib, f.File)
			}
		}
	}
}

// libNamed finds a process's lib whose path is path.
func libNamed(proc *profile.Process, path string) *profile.Lib {
	for i := range proc.Libs {
		if proc.Libs[i].Path == path {
			return &proc.Libs[i]
		}
	}
	return nil
}

// TestFaultVanishedBinary records programs whose binary is gone: deleted,
// with its directory, before gprof attaches (gprof can reach the file only
// through /proc/PID/map_files), or during a launched recording. The
// profile is written with a lib entry for the binary; the names are there
// when gprof could keep the file open, else the lib's name says why.
func TestFaultVanishedBinary(t *testing.T) {
	for _, be := range backends {
		t.Run("attach/"+be, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "gone")
			os.Mkdir(dir, 0o755)
			bin := filepath.Join(dir, "vanish")
			copyFile(t, buildC(t, "spin"), bin)
			target := exec.Command(bin)
			stdout, _ := target.StdoutPipe()
			if err := target.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { target.Process.Kill(); target.Wait() })
			if line, _ := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != "ready" {
				t.Fatalf("spin said %q", line)
			}
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			pid := target.Process.Pid
			out := filepath.Join(t.TempDir(), "v.json.gz")
			r := mustRecord(t, "-q", "--backend", be, "-d", "0.6", "-p", strconv.Itoa(pid), "-o", out)
			assertUnharmed(t, pid)
			p := r.profile
			lib := libNamed(p.Processes[0], bin)
			if lib == nil {
				t.Fatalf("no lib for %s in %+v", bin, p.Processes[0].Libs)
			}
			rep := reportThreads(t, out)
			if rep.selfSamples("", "burn") == 0 {
				if !strings.Contains(lib.Name, "(deleted)") && !strings.Contains(lib.Name, "(unreadable)") {
					t.Errorf("no names, and lib %q does not say why", lib.Name)
				}
				t.Errorf("gprof lost the names of a binary deleted before attach (lib %q)", lib.Name)
			}
		})
	}
	t.Run("launch", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "gone")
		os.Mkdir(dir, 0o755)
		bin := filepath.Join(dir, "vanish")
		copyFile(t, buildC(t, "split"), bin)
		out := filepath.Join(t.TempDir(), "v.json.gz")
		script := fmt.Sprintf("%s 1 0.5 & sleep 0.1; rm -r %s; wait", bin, dir)
		r := mustRecord(t, "-q", "-o", out, "--", "sh", "-c", script)
		if _, err := os.Stat(dir); err == nil {
			t.Fatal("the directory was not removed")
		}
		p := r.profile
		var lib *profile.Lib
		for _, proc := range p.Processes {
			if l := libNamed(proc, bin); l != nil {
				lib = l
			}
		}
		if lib == nil {
			t.Fatalf("no lib for %s", bin)
		}
		rep := reportThreads(t, out)
		margin(t, "vanish work_a", float64(rep.selfSamples("vanish", "work_a")), 100)
		if n := rep.selfSamples("vanish", "work_a"); n < 100 {
			t.Errorf("work_a of the deleted binary has %d samples named (lib %q)", n, lib.Name)
		}
	})
}

// TestFaultGonePid: a pid whose process has exited and been reaped is an
// error before anything starts: exit 1, one line, "no such process", and
// no output. A zombie (exited, not yet reaped by its parent) has nothing
// left to sample. The backends differ in words, both acceptable: perf
// fails with "pid N exited while attaching: no such process", ptrace
// records nothing and says it "exited before it could be (no such
// process)"; both exit 1 and write nothing.
// Either way gprof returns at once instead of waiting for --duration.
func TestFaultGonePid(t *testing.T) {
	dir := t.TempDir()
	for _, be := range backends {
		t.Run("reaped/"+be, func(t *testing.T) {
			c := exec.Command("true")
			if err := c.Run(); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "g.json")
			r := gprof(t, "record", "--backend", be, "-p", strconv.Itoa(c.Process.Pid), "-o", out)
			oneErrorLine(t, r, "no such process")
			if _, err := os.Stat(out); err == nil {
				t.Errorf("output written for a gone pid")
			}
		})
		t.Run("zombie/"+be, func(t *testing.T) {
			c := exec.Command("true")
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			defer c.Wait()
			pid := c.Process.Pid
			for i := 0; ; i++ {
				states, _ := procState(t, pid)
				if states == "Z" {
					break
				}
				if i > 200 {
					t.Fatalf("pid %d never became a zombie: %q", pid, states)
				}
				time.Sleep(10 * time.Millisecond)
			}
			out := filepath.Join(dir, "z-"+be+".json")
			start := time.Now()
			r := gprof(t, "record", "-q", "--backend", be, "-d", "5", "-p", strconv.Itoa(pid), "-o", out)
			if el := time.Since(start); el > 4*time.Second {
				t.Errorf("recording a zombie took %v: it waited for --duration", el)
			}
			if r.code == 0 {
				if _, err := gecko.ReadFile(out); err != nil {
					t.Errorf("profile of a zombie: %v", err)
				}
			} else {
				oneErrorLine(t, r, "no such process")
			}
			t.Logf("zombie pid with %s: exit %d %s", be, r.code, strings.TrimSpace(r.stderr))
		})
	}
}

// TestFaultTwoProfilers runs two gprof instances on one process at once:
// both succeed with samples, and the target carries on. Two perf
// recordings are independent; perf plus ptrace share only the target.
func TestFaultTwoProfilers(t *testing.T) {
	for _, pair := range [][2]string{{"perf", "perf"}, {"perf", "ptrace"}} {
		t.Run(pair[0]+"+"+pair[1], func(t *testing.T) {
			spin := startSpin(t)
			pid := spin.Process.Pid
			dir := t.TempDir()
			var gs [2]*bgGprof
			for i, be := range pair {
				gs[i] = startGprof(t, nil, "record", "-q", "--backend", be, "-d", "1", "-p", strconv.Itoa(pid), "-o", filepath.Join(dir, fmt.Sprintf("%d.json.gz", i)))
			}
			for i, g := range gs {
				if !g.exited(20 * time.Second) {
					t.Fatalf("gprof %d did not finish", i)
				}
				if !g.cmd.ProcessState.Success() {
					skipIfNoBackend(t, g.stderr.String())
					t.Errorf("gprof %d (%s): %v: %s", i, pair[i], g.cmd.ProcessState, g.stderr.String())
				}
			}
			assertUnharmed(t, pid)
			for i := range gs {
				p, err := gecko.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.json.gz", i)))
				if err != nil {
					t.Errorf("gprof %d: %v", i, err)
					continue
				}
				// Both see the spinning thread. How many samples
				// each gets depends on the CPU it is given beside the
				// other profiler (ptrace got 166 in 1 s beside a CPU
				// hog); the rate itself is checked elsewhere.
				margin(t, pair[i]+" beside another", float64(samplesByTid(p)[pid]), 50)
				if n := samplesByTid(p)[pid]; n < 50 {
					t.Errorf("gprof %d (%s): %d samples in 1 s", i, pair[i], n)
				}
			}
		})
	}
}

// TestFaultFullDisk writes profiles onto a tiny, nearly full tmpfs: a
// clear one-line error naming the file, exit 1, the existing file there
// byte for byte, and no temporary files left behind.
func TestFaultFullDisk(t *testing.T) {
	dir := t.TempDir()
	mnt := filepath.Join(dir, "full")
	os.Mkdir(mnt, 0o755)
	if b, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, b)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	good := filepath.Join(mnt, "good.json")
	old := []byte(`{"precious": true}`)
	if err := os.WriteFile(good, old, 0o644); err != nil {
		t.Fatal(err)
	}
	// Fill the disk: files can still be created (tmpfs counts inodes
	// apart), but not a byte written to them.
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = filler.Write(make([]byte, 4096))
	}
	filler.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the tmpfs: %v", err)
	}
	check := func(t *testing.T, r result) {
		t.Helper()
		oneErrorLine(t, r, good)
		if !strings.Contains(r.stderr, "no space") {
			t.Errorf("error %q does not say the disk is full", r.stderr)
		}
		if b, _ := os.ReadFile(good); !bytes.Equal(b, old) {
			t.Errorf("the existing file changed (%d bytes now)", len(b))
		}
		if names := dirNames(t, mnt); len(names) != 2 {
			t.Errorf("files left behind: %v", names)
		}
	}
	split := buildC(t, "split")
	t.Run("record", func(t *testing.T) {
		r := gprof(t, "record", "-q", "-o", good, "--", split, "1", "0.3")
		skipIfNoPerf(t, r)
		check(t, r)
	})
	t.Run("record-gz", func(t *testing.T) {
		gzGood := good + ".gz"
		os.Rename(good, gzGood)
		defer os.Rename(gzGood, good)
		r := gprof(t, "record", "-q", "-o", gzGood, "--", split, "1", "0.3")
		skipIfNoPerf(t, r)
		oneErrorLine(t, r, gzGood)
		if b, _ := os.ReadFile(gzGood); !bytes.Equal(b, old) {
			t.Errorf("the existing file changed (%d bytes now)", len(b))
		}
		if names := dirNames(t, mnt); len(names) != 2 {
			t.Errorf("files left behind: %v", names)
		}
	})
	t.Run("convert", func(t *testing.T) {
		in := filepath.Join(dir, "in.json.gz")
		mustRecord(t, "-q", "-o", in, "--", split, "1", "0.3")
		check(t, gprof(t, "convert", in, "-o", good))
	})
}

// TestFaultCorruptInput feeds convert and report truncated, corrupt and
// unsupported files made from a real recording: each is exit 1 and one
// "gprof: error:" line naming the file, never a panic, and convert writes
// nothing.
func TestFaultCorruptInput(t *testing.T) {
	split := buildC(t, "split")
	dir := t.TempDir()
	src := filepath.Join(dir, "real.json")
	mustRecord(t, "-q", "-o", src, "--", split, "1", "0.1")
	plain, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	procPath := filepath.Join(dir, "real-processed.json")
	if r := gprof(t, "convert", src, "-o", procPath); r.code != 0 {
		t.Fatalf("convert: exit %d: %s", r.code, r.stderr)
	}
	processed, _ := os.ReadFile(procPath)
	gzipped := gzipBytes(plain)

	inputs := map[string][]byte{
		"empty.json":          {},
		"garbage.bin":         bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x00, 0x7f}, 500),
		"array.json":          []byte(`[1, 2, {"meta": {}}]`),
		"string.json":         []byte(`"hello"`),
		"null.json":           []byte(`null`),
		"gzip-header-only.gz": gzipped[:10],
		"too-new.json": bytes.Replace(processed, []byte(`"preprocessedProfileVersion":66`),
			[]byte(`"preprocessedProfileVersion":999`), 1),
	}
	if bytes.Equal(inputs["too-new.json"], processed) {
		t.Fatal("the processed profile has no preprocessedProfileVersion 66 to change")
	}
	for _, pct := range []int{10, 50, 90} {
		cut := plain[:len(plain)*pct/100]
		inputs[fmt.Sprintf("cut%d.json", pct)] = cut
		inputs[fmt.Sprintf("cut%d.json.gz", pct)] = gzipBytes(cut)
		inputs[fmt.Sprintf("gzip-cut%d.json.gz", pct)] = gzipped[:len(gzipped)*pct/100]
		inputs[fmt.Sprintf("processed-cut%d.json", pct)] = processed[:len(processed)*pct/100]
	}
	for name, data := range inputs {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			oneErrorLine(t, gprof(t, "report", path), path)
			conv := filepath.Join(dir, "out-"+name)
			oneErrorLine(t, gprof(t, "convert", path, "-o", conv), path)
			if _, err := os.Stat(conv); err == nil {
				t.Errorf("convert wrote %s from a bad input", conv)
			}
		})
	}
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// TestFaultForkedChildName: a forked child that renames itself (as worker
// processes do) is named the same by both backends: by its own name, as
// perf reports it, not by the command line it shares with its parent.
func TestFaultForkedChildName(t *testing.T) {
	bin := buildFault(t, "renamer")
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "n.json.gz")
			r := mustRecord(t, "-q", "--backend", be, "-o", out, "--", bin, "kid")
			p := r.profile
			var names []string
			for _, proc := range p.Processes {
				names = append(names, proc.Name)
			}
			if len(p.Processes) != 2 || p.Processes[0].Name != filepath.Base(bin) || p.Processes[1].Name != "kid" {
				t.Errorf("processes %q, want [%s kid]", names, filepath.Base(bin))
			}
			// burn is inlined into child_burn; the report names the
			// innermost frame.
			margin(t, "kid burn", float64(reportThreads(t, out).selfSamples("kid", "burn")), 40)
			if n := reportThreads(t, out).selfSamples("kid", "burn"); n < 40 {
				t.Errorf("the child's burn has %d samples in the process named kid", n)
			}
		})
	}
}

// TestFaultThreadLibraryLoadedByAnother: recording one thread alone (-t),
// the frames of a library that another thread loaded meanwhile are still
// named, with each backend: perf reports a mapping only to the events of
// the thread that made it, so gprof must look for it.
func TestFaultThreadLibraryLoadedByAnother(t *testing.T) {
	bin := buildFault(t, "dlthread", "-ldl")
	lib := filepath.Join(fixtures, "fault-libdlib.so")
	if _, err := os.Stat(lib); err != nil {
		src := filepath.Join("testdata", "fault", "dlib.c")
		if b, err := rootCommand("gcc", "-O2", "-g", "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
			t.Fatalf("gcc dlib: %v\n%s", err, b)
		}
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			target := exec.Command(bin, lib)
			stdout, _ := target.StdoutPipe()
			if err := target.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { target.Process.Kill(); target.Wait() })
			br := bufio.NewReader(stdout)
			if line, _ := br.ReadString('\n'); strings.TrimSpace(line) != "ready" {
				t.Fatalf("dlthread said %q", line)
			}
			pid := target.Process.Pid
			loaded := make(chan string, 1)
			go func() {
				time.Sleep(300 * time.Millisecond)
				syscall.Kill(pid, syscall.SIGUSR1)
				line, _ := br.ReadString('\n')
				loaded <- strings.TrimSpace(line)
			}()
			out := filepath.Join(t.TempDir(), "d.json.gz")
			mustRecord(t, "-q", "--backend", be, "-d", "1.5", "-t", strconv.Itoa(pid), "-o", out)
			if s := <-loaded; s != "loaded" {
				t.Fatalf("dlthread said %q", s)
			}
			rep := reportThreads(t, out)
			margin(t, "dlib_hot by another", float64(rep.selfSamples("", "dlib_hot")), 50)
			margin(t, "main_burn", float64(rep.selfSamples("", "main_burn")), 20)
			if n := rep.selfSamples("", "dlib_hot"); n < 50 {
				t.Errorf("dlib_hot, loaded by another thread, has %d samples named", n)
			}
			if n := rep.selfSamples("", "main_burn"); n < 20 {
				t.Errorf("main_burn has %d samples", n)
			}
		})
	}
}
