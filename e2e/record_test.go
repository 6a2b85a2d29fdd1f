//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/format"
	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/profile"
)

// TestRecordLaunchMultiThread is issue 2's acceptance check on a launched
// multi-threaded C program: every thread present, samples per busy thread
// within 10% of rate × CPU time, nothing lost, every address in a lib,
// breakpad IDs as breakpad computes them, and the layout the Firefox
// Profiler needs.
func TestRecordLaunchMultiThread(t *testing.T) {
	bin := buildC(t, "split")
	out := filepath.Join(t.TempDir(), "p.json.gz")
	r := mustRecord(t, "-q", "-r", "1000", "-o", out, "--", bin, "3", "0.7")
	if r.stderr != "" {
		t.Errorf("-q printed to stderr: %q", r.stderr)
	}
	cpu := workerCPU(t, r.stdout)

	p := r.profile
	if p.Meta.LostEvents != 0 {
		t.Errorf("lost %d events at 1 kHz", p.Meta.LostEvents)
	}
	if len(p.Processes) != 1 {
		t.Fatalf("got %d processes, want 1", len(p.Processes))
	}
	proc := p.Processes[0]
	threads := map[int]*profile.Thread{}
	for _, th := range proc.Threads {
		threads[th.Tid] = th
	}
	if _, ok := threads[proc.Pid]; !ok {
		t.Errorf("main thread %d missing", proc.Pid)
	}
	for tid, ns := range cpu {
		th := threads[tid]
		if th == nil {
			t.Errorf("worker thread %d missing from the profile", tid)
			continue
		}
		want := float64(ns) / float64(time.Millisecond)
		got := float64(th.Samples.Len())
		margin(t, "samples per CPU ms (±0.10)", got/want, 1)
		if math.Abs(got-want) > 0.10*want {
			t.Errorf("thread %d: %v samples for %.0f ms of CPU at 1 kHz; want within 10%%", tid, got, want)
		}
	}

	// Every sampled address lies in a lib of its process.
	for _, th := range proc.Threads {
		for _, f := range th.Frames.Frames {
			if f.Label == "" && profile.FindLib(proc.Libs, f.Address) == nil {
				t.Errorf("thread %d: address %#x is in no lib", th.Tid, f.Address)
			}
		}
	}
	// The program's own lib carries breakpad's ID for its build-id.
	bid := readelfBuildID(t, bin)
	found := false
	for _, l := range proc.Libs {
		if l.Path == bin {
			found = true
			if want := objfile.BreakpadID(bid, true); l.BreakpadID != want {
				t.Errorf("breakpadId %s, want %s", l.BreakpadID, want)
			}
			if want := fmt.Sprintf("%x", bid); l.CodeID != want {
				t.Errorf("codeId %s, want %s", l.CodeID, want)
			}
		}
	}
	if !found {
		t.Errorf("no lib for %s in %v", bin, proc.Libs)
	}

	// What the Firefox Profiler reads: version 36, libs sorted, GeckoMain.
	raw := readRaw(t, out)
	meta := raw["meta"].(map[string]any)
	if meta["version"] != float64(36) {
		t.Errorf("meta.version = %v", meta["version"])
	}
	var last float64 = -1
	for _, l := range raw["libs"].([]any) {
		lm := l.(map[string]any)
		if s := lm["start"].(float64); s < last {
			t.Errorf("libs not sorted by start")
		} else {
			last = s
		}
	}
	mainSeen := false
	for _, th := range raw["threads"].([]any) {
		tm := th.(map[string]any)
		if tm["name"] == "GeckoMain" {
			mainSeen = true
			if tm["processName"] != "split" {
				t.Errorf("GeckoMain's processName = %v, want split", tm["processName"])
			}
		}
	}
	if !mainSeen {
		t.Error("no thread named GeckoMain")
	}
}

// TestSplitSurvivesDeletedBinary is issue 3's acceptance check: record a
// C program with a known 50/30/20 split, delete the binary, and still get
// names, files, lines and the split from report and convert.
func TestSplitSurvivesDeletedBinary(t *testing.T) {
	src := buildC(t, "split")
	dir := t.TempDir()
	bin := filepath.Join(dir, "split")
	copyFile(t, src, bin)
	out := filepath.Join(dir, "p.json.gz")
	mustRecord(t, "-q", "-r", "4000", "-o", out, "--", bin, "2", "1")
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}

	rep := runReport(t, out)
	// Total time, not self: time in the kernel (interrupts, and
	// preemption on a loaded machine) is a [kernel] frame on top of the
	// function it interrupted, and is that function's time too.
	want := map[string]float64{"work_a": 50, "work_b": 30, "work_c": 20}
	for name, pct := range want {
		f, ok := findFunc(rep.All.TopTotal, name)
		if !ok {
			t.Errorf("%s missing from the report of a deleted binary", name)
			continue
		}
		margin(t, name+" total % (±2)", f.TotalPct, pct)
		if math.Abs(f.TotalPct-pct) > 2 {
			t.Errorf("%s total time %.2f%%, want %.0f%% ± 2", name, f.TotalPct, pct)
		}
		if !strings.HasSuffix(f.File, "split.c") || f.Line == 0 {
			t.Errorf("%s: location %s:%d, want split.c and a line", name, f.File, f.Line)
		}
	}

	conv := filepath.Join(dir, "processed.json.gz")
	if r := gprof(t, "convert", out, "-o", conv); r.code != 0 {
		t.Fatalf("convert: exit %d: %s", r.code, r.stderr)
	}
	raw := readRaw(t, conv)
	meta := raw["meta"].(map[string]any)
	if meta["symbolicated"] != true {
		t.Errorf("processed meta.symbolicated = %v", meta["symbolicated"])
	}
	pp, _, err := format.File(conv)
	if err != nil {
		t.Fatalf("reading gprof's processed output: %v", err)
	}
	names := map[string]bool{}
	for _, ls := range pp.Symbols.Libs {
		for _, frames := range ls.Addresses {
			for _, f := range frames {
				names[f.Function] = true
			}
		}
	}
	for _, n := range []string{"work_a", "work_b", "work_c", "run"} {
		if !names[n] {
			t.Errorf("processed profile lacks a function named %s", n)
		}
	}
}

// TestDeletedAsItExits records a short program whose binary is deleted
// as soon as it exits, as go test deletes its test binaries: the perf
// backend handles a short program's samples only after it has exited
// (attach/perf's holdFor), and must have opened the binary, for its
// names and its unwind tables, while the program ran.
func TestDeletedAsItExits(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "brief")
	copyFile(t, buildC(t, "brief"), bin)
	out := filepath.Join(dir, "p.json.gz")
	mustRecord(t, "-q", "-o", out, "--", "sh", "-c", bin+" 64 1 && rm "+bin)
	if _, err := os.Stat(bin); !os.IsNotExist(err) {
		t.Fatalf("the program was not deleted (%v)", err)
	}
	rep := runReport(t, out)
	// Unwound through the deleted binary (its own unwind tables) to
	// main, and named with its file and line.
	for _, name := range []string{"run", "main"} {
		f, ok := findFunc(rep.All.TopTotal, name)
		if !ok {
			t.Errorf("%s missing from the report", name)
			continue
		}
		margin(t, name+" total % (>= 70)", f.TotalPct, 70)
		if f.TotalPct < 70 {
			t.Errorf("%s total time %.1f%%, want most of the recording's", name, f.TotalPct)
		}
		if !strings.HasSuffix(f.File, "brief.c") || f.Line == 0 {
			t.Errorf("%s: location %s:%d, want brief.c and a line", name, f.File, f.Line)
		}
	}
}

// TestAttach attaches to a running process, sees a thread it creates
// afterwards, and leaves it running.
func TestAttach(t *testing.T) {
	spin := startSpin(t)
	pid := spin.Process.Pid
	out := filepath.Join(t.TempDir(), "a.json")
	go func() {
		time.Sleep(400 * time.Millisecond)
		syscall.Kill(pid, syscall.SIGUSR1) // spin starts its second thread
	}()
	r := mustRecord(t, "-p", strconv.Itoa(pid), "-d", "1.2", "-o", out)
	assertUnharmed(t, pid)
	p := r.profile
	proc := p.Processes[0]
	if proc.Pid != pid || len(proc.Threads) != 2 {
		t.Fatalf("got pid %d with %d threads, want pid %d with 2 (one created after attach)", proc.Pid, len(proc.Threads), pid)
	}
	for _, th := range proc.Threads {
		margin(t, "attached thread samples", float64(th.Samples.Len()), 50)
		if th.Samples.Len() < 50 {
			t.Errorf("thread %d (%s): only %d samples", th.Tid, th.Name, th.Samples.Len())
		}
	}
	rep := runReport(t, out)
	for _, fn := range []string{"spin_main", "spin_late", "burn"} {
		if _, ok := findFunc(rep.All.TopTotal, fn); !ok {
			t.Errorf("attached profile lacks %s", fn)
		}
	}
}

// TestSignalsStopRecording sends SIGINT and SIGTERM to gprof while it is
// attached, with each backend: gprof exits 0 with a valid profile, and the
// target carries on, not stopped, not traced.
func TestSignalsStopRecording(t *testing.T) {
	for _, be := range backends {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(be+"/"+sig.String(), func(t *testing.T) {
				spin := startSpin(t)
				pid := spin.Process.Pid
				out := filepath.Join(t.TempDir(), "s.json.gz")
				g := startGprof(t, nil, "record", "-q", "--backend", be, "-p", strconv.Itoa(pid), "-o", out)
				if g.exited(700 * time.Millisecond) {
					skipIfNoBackend(t, g.stderr.String())
					t.Fatalf("gprof ended by itself: %s", g.stderr.String())
				}
				g.cmd.Process.Signal(sig)
				if !g.exited(10 * time.Second) {
					t.Fatalf("gprof still running 10 s after %v", sig)
				}
				if !g.cmd.ProcessState.Success() {
					t.Fatalf("gprof after %v: %v: %s", sig, g.cmd.ProcessState, g.stderr.String())
				}
				assertUnharmed(t, pid)
				p, err := gecko.ReadFile(out)
				if err != nil {
					t.Fatalf("profile after %v: %v", sig, err)
				}
				// Samples up to the signal were kept. How many the
				// 0.7 s held depends on the CPU the target got (ptrace
				// beside three CPU-bound loops: 86).
				if n := samplesByTid(p)[pid]; n < 20 {
					t.Errorf("only %d samples before %v", n, sig)
				}
			})
		}
	}
}

// TestLaunchFollowsChildren profiles a shell that runs the program twice:
// both child processes are in the profile with their samples.
func TestLaunchFollowsChildren(t *testing.T) {
	bin := buildC(t, "split")
	out := filepath.Join(t.TempDir(), "c.json.gz")
	r := mustRecordExit(t, 4, "-q", "-o", out, "--", "sh", "-c", bin+" 1 0.2 && "+bin+" 1 0.2; exit 7")
	p := r.profile
	var splits int
	for _, proc := range p.Processes {
		if proc.Name != "split" {
			continue
		}
		splits++
		n := 0
		for _, th := range proc.Threads {
			n += th.Samples.Len()
		}
		margin(t, "split child samples", float64(n), 150)
		if n < 150 {
			t.Errorf("split pid %d: %d samples, want about 200", proc.Pid, n)
		}
	}
	if splits != 2 {
		names := []string{}
		for _, proc := range p.Processes {
			names = append(names, fmt.Sprintf("%s(%d)", proc.Name, proc.Pid))
		}
		t.Errorf("want 2 split processes, got %v", names)
	}
}

// TestGoProgram profiles a Go program: Go function names come out.
func TestGoProgram(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "gohot")
	build := rootCommand("go", "build", "-o", bin, "./testdata/gohot")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	out := filepath.Join(dir, "g.json.gz")
	mustRecord(t, "-q", "-o", out, "--", bin)
	rep := runReport(t, out)
	for _, fn := range []string{"main.hot", "main.main"} {
		if _, ok := findFunc(rep.All.TopTotal, fn); !ok {
			t.Errorf("Go profile lacks %s; top: %v", fn, rep.All.TopTotal)
		}
	}
}

// TestSystemBinaryStacks profiles Debian's perl, built without frame
// pointers: every stack in perl's run loop reaches _start. Stacks from
// before main (the dynamic loader, exec in the kernel) have no _start to
// reach: they are a fixed few milliseconds, so their share of all stacks
// would judge the host's speed, not the unwinder.
func TestSystemBinaryStacks(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed")
	}
	out := filepath.Join(t.TempDir(), "perl.json.gz")
	mustRecord(t, "-q", "-o", out, "--", "perl", "-e", `my $s = 0; $s += sqrt($_) for 1 .. 1.2e7; print "$s\n"`)
	var inLoop, rooted, all int
	var strays []string
	for stack, n := range collapsed(t, out, "perl") {
		all += n
		// Collapsed stacks lead with the thread's name, then the root frame.
		frames := strings.Split(stack, ";")[1:]
		if !slices.Contains(frames, "Perl_runops_standard") {
			continue
		}
		inLoop += n
		if frames[0] == "_start" {
			rooted += n
		} else if len(strays) < 5 {
			strays = append(strays, stack)
		}
	}
	if inLoop < 50 || float64(inLoop) < 0.9*float64(all) {
		t.Fatalf("%d of %d samples in Perl_runops_standard: perl's own symbols were not used, or stacks stop short of it", inLoop, all)
	}
	share := 100 * float64(rooted) / float64(inLoop)
	margin(t, "perl run-loop stacks reaching _start %", share, 99)
	if share < 99 {
		t.Errorf("_start is on %.1f%% of the %d stacks through Perl_runops_standard, want ≥ 99%%; some that stop short: %q", share, inLoop, strays)
	}
}

// TestLazyBindingStacks profiles calls that all go through glibc's
// lazy-binding trampoline, which realigns the stack and keeps its CFA in
// rbx: unwinding it needs rbx, restored through the frames above it. Both
// backends capture rbx; with it, stacks reach main through the trampoline.
func TestLazyBindingStacks(t *testing.T) {
	bin := buildC(t, "lazy", "-O1", "-Wl,-z,lazy") // lazy even where the toolchain binds at load by default
	t.Setenv("LD_BIND_NOT", "1")
	for _, backend := range []string{"perf", "ptrace"} {
		t.Run(backend, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "lazy.json.gz")
			mustRecord(t, "-q", "--backend", backend, "-o", out, "--", bin)
			in, reach := 0, 0
			for stack, n := range collapsed(t, out, "lazy") {
				if !strings.Contains(stack, ";_dl_runtime_resolve") {
					continue
				}
				in += n
				if strings.Contains(stack, ";main;") {
					reach += n
				}
			}
			if in < 50 {
				t.Fatalf("only %d samples in the lazy-binding trampoline, want most of the ~300", in)
			}
			margin(t, "trampoline samples", float64(in), 50)
			margin(t, "trampoline reach %", 100*float64(reach)/float64(in), 99)
			if pct := 100 * float64(reach) / float64(in); pct < 99 {
				t.Errorf("%.1f%% of the %d samples in the trampoline reach main, want ≥ 99%%", pct, in)
			}
		})
	}
}

// TestStackCopyCutShort profiles a program spinning under a 24 KiB deep
// recursion: the default 16 KiB stack copy cannot hold its stacks, and
// gprof says so, naming the flag that helps; with --stack-size 64K (the
// kernel's limit, 65528 bytes) the stacks reach main and nothing is said.
func TestStackCopyCutShort(t *testing.T) {
	bin := buildC(t, "deep")
	for _, c := range []struct {
		size   string
		notice bool
	}{{"16K", true}, {"64K", false}} {
		t.Run(c.size, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "deep.json.gz")
			r := mustRecord(t, "--stack-size", c.size, "-o", out, "--", bin, "0.4")
			said := strings.Contains(r.stderr, "stop where the 16384-byte stack copy ends") && strings.Contains(r.stderr, "--stack-size 64K")
			if said != c.notice {
				t.Errorf("stderr %q: notice of short copies %v, want %v", r.stderr, said, c.notice)
			}
			all, reach := 0, 0
			for stack, n := range collapsed(t, out, "deep") {
				all += n
				if strings.Contains(stack, ";main;") {
					reach += n
				}
			}
			if all < 50 {
				t.Fatalf("only %d samples", all)
			}
			margin(t, "deep reach fraction", float64(reach)/float64(all), 0.95)
			if full := float64(reach) >= 0.95*float64(all); full == c.notice {
				t.Errorf("%d of %d stacks reach main", reach, all)
			}
		})
	}
}

// TestErrors checks bad input: one line on stderr, the documented exit
// code, and an existing output file left alone.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "keep.json")
	os.WriteFile(good, []byte(`{"precious": true}`), 0o644)
	corrupt := filepath.Join(dir, "corrupt.json.gz")
	os.WriteFile(corrupt, []byte("\x1f\x8b\x08\x00garbage"), 0o644)
	notProfile := filepath.Join(dir, "np.json")
	os.WriteFile(notProfile, []byte(`{"hello": [1,2,3]}`), 0o644)

	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no target", []string{"record"}, 2, "nothing to profile"},
		{"both targets", []string{"record", "-p", "1", "--", "true"}, 2, "not both"},
		{"bad pid", []string{"record", "-p", "abc"}, 2, "invalid PID"},
		{"bad rate", []string{"record", "-r", "0", "--", "true"}, 2, "--rate"},
		{"bad interval", []string{"record", "-i", "fast", "--", "true"}, 2, "--interval"},
		{"bad duration", []string{"record", "-d", "-3", "--", "true"}, 2, "--duration"},
		{"unknown flag", []string{"record", "--frobnicate", "--", "true"}, 2, "frobnicate"},
		{"unknown command", []string{"frob"}, 2, "unknown command"},
		{"missing pid", []string{"record", "-p", "999999999", "-o", good}, 1, "no such process"},
		{"missing command", []string{"record", "-o", good, "--", "/no/such/program"}, 1, "/no/such/program"},
		{"unwritable output", []string{"record", "-o", "/no/such/dir/p.json", "--", "true"}, 1, "does not exist"},
		{"corrupt input", []string{"report", corrupt}, 1, corrupt},
		{"not a profile", []string{"convert", notProfile, "-o", good}, 1, "np.json"},
		{"missing input", []string{"report", filepath.Join(dir, "nope.json")}, 1, "does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := gprof(t, c.args...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, c.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "gprof: error: ") {
				t.Errorf("want one 'gprof: error:' line, got %q", r.stderr)
			}
			if !strings.Contains(r.stderr, c.want) {
				t.Errorf("stderr %q does not mention %q", r.stderr, c.want)
			}
			if b, _ := os.ReadFile(good); string(b) != `{"precious": true}` {
				t.Fatalf("an existing output file was changed: %q", b)
			}
		})
	}
}

// TestVersionAndHelp guards the basics scripts and users start from.
func TestVersionAndHelp(t *testing.T) {
	if r := gprof(t, "--version"); r.code != 0 || !strings.Contains(r.stdout, "gprof version") {
		t.Errorf("--version: %d %q", r.code, r.stdout)
	}
	r := gprof(t, "record", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "Examples:") {
		t.Errorf("record --help has no examples: %d %q", r.code, r.stdout)
	}
	if runtime.GOOS != "linux" {
		t.Skip("rest needs Linux")
	}
}

// TestDurationStopsLaunchedCommand: at --duration the launched command is
// sent SIGTERM, the profile is written, gprof exits 0, and --json reports
// what happened.
func TestDurationStopsLaunchedCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "d.json.gz")
	start := time.Now()
	r := mustRecord(t, "-q", "--json", "-d", "0.5", "-o", out, "--", "sleep", "30")
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v: the command was not stopped", el)
	}
	var sum struct {
		Output   string `json:"output"`
		ExitCode *int   `json:"exit_code"`
		Backend  string `json:"backend"`
		Samples  int    `json:"samples"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("--json printed %q: %v", r.stdout, err)
	}
	if sum.Output != out || sum.Backend == "" {
		t.Errorf("summary %+v", sum)
	}
	if sum.ExitCode == nil || *sum.ExitCode != 128+int(syscall.SIGTERM) {
		t.Errorf("exit_code %v, want %d (terminated by SIGTERM)", sum.ExitCode, 128+int(syscall.SIGTERM))
	}
}

// TestProfileEndsWithSampling: a recording that ends before its launched
// command (here at --duration) ends when sampling stopped, not after the
// grace the command is given to end (it went on running, unsampled, for
// 250 ms and more at the end of each profile: 1,273 ms for 1 s of
// sampling), with each Linux backend.
func TestProfileEndsWithSampling(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "d.json.gz")
			mustRecord(t, "-q", "--backend", be, "-d", "1", "-o", out, "--", "sh", "-c", "while :; do :; done")
			p, err := gecko.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var last int64
			for _, pr := range p.Processes {
				for _, th := range pr.Threads {
					if n := th.Samples.Len(); n > 0 {
						last = max(last, th.Samples.Time[n-1])
					}
				}
			}
			gap := time.Duration(p.Meta.Duration - last)
			margin(t, "ms from the last sample to the end", float64(gap.Milliseconds()), 100)
			if last == 0 || gap > 100*time.Millisecond {
				t.Errorf("the profile ends %v after its last sample (%v after its start)", gap, time.Duration(p.Meta.Duration))
			}
			// Nor do the process counters go on past it.
			for _, pr := range p.Processes {
				for _, c := range pr.Counters {
					if n := len(c.Time); n > 0 && c.Time[n-1] > p.Meta.Duration {
						t.Errorf("counter %s has a reading %v after the profile's end", c.Name, time.Duration(c.Time[n-1]-p.Meta.Duration))
					}
				}
			}
		})
	}
}

// TestLaunchExecFails: a command that exists but cannot be run (a script
// whose #! interpreter is missing, a text file with no #! line) is an
// error, with each backend: exit 1, one line saying why, and no profile.
func TestLaunchExecFails(t *testing.T) {
	dir := t.TempDir()
	badShebang := filepath.Join(dir, "x.sh")
	os.WriteFile(badShebang, []byte("#!/bin/nosuch -e\necho hi\n"), 0o755)
	noShebang := filepath.Join(dir, "plain")
	os.WriteFile(noShebang, []byte("\x01\x02 not a program\n"), 0o755)
	for _, be := range backends {
		for _, c := range []struct{ name, path, want string }{
			{"bad-interpreter", badShebang, "cannot run " + badShebang + ": bad interpreter /bin/nosuch: no such file"},
			{"not-a-program", noShebang, "cannot run " + noShebang + ": exec format error"},
		} {
			t.Run(be+"/"+c.name, func(t *testing.T) {
				out := filepath.Join(dir, be+c.name+".json")
				r := gprof(t, "record", "--backend", be, "-o", out, "--", c.path)
				oneErrorLine(t, r, c.want)
				if _, err := os.Stat(out); err == nil {
					t.Errorf("a profile was written for a command that never ran")
				}
			})
		}
	}
}

// TestCommandFailureExitCode: a launched command that fails on its own
// makes gprof exit 4 (docs/recording.md's table), distinct from gprof's own failure
// (1), with the profile written and the command's status in --json.
func TestCommandFailureExitCode(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"false"}, 1},
		{[]string{"sh", "-c", "exit 7"}, 7},
		{[]string{"sh", "-c", "kill -9 $$"}, 128 + 9},
	} {
		t.Run(c.args[len(c.args)-1], func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "f.json")
			r := mustRecordExit(t, 4, append([]string{"-q", "--json", "-o", out, "--"}, c.args...)...)
			var sum struct {
				ExitCode *int `json:"exit_code"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
				t.Fatalf("--json printed %q: %v", r.stdout, err)
			}
			if sum.ExitCode == nil || *sum.ExitCode != c.code {
				t.Errorf("exit_code %v, want %d", sum.ExitCode, c.code)
			}
		})
	}
}

// startSpin2 starts spin with its second thread running and returns the
// process and that thread's id.
func startSpin2(t *testing.T) (*exec.Cmd, int) {
	t.Helper()
	spin := startSpin(t)
	pid := spin.Process.Pid
	syscall.Kill(pid, syscall.SIGUSR1)
	for i := 0; i < 200; i++ {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, task := range tasks {
			if tid, _ := strconv.Atoi(task.Name()); tid != pid {
				return spin, tid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("spin did not start its second thread")
	return nil, 0
}

// TestRecordThread: -t TID samples that thread alone, with each backend:
// one process, the right pid and name, only that thread, its frames
// named from its process's libraries.
func TestRecordThread(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			spin, late := startSpin2(t)
			pid := spin.Process.Pid
			out := filepath.Join(t.TempDir(), "t.json.gz")
			r := mustRecord(t, "-q", "--backend", be, "-d", "0.8", "-t", strconv.Itoa(late), "-o", out)
			assertUnharmed(t, pid)
			p := r.profile
			if len(p.Processes) != 1 {
				t.Fatalf("%d processes, want 1", len(p.Processes))
			}
			proc := p.Processes[0]
			if proc.Pid != pid || proc.Name != "spin" {
				t.Errorf("process %q pid %d, want spin pid %d", proc.Name, proc.Pid, pid)
			}
			if len(proc.Threads) != 1 || proc.Threads[0].Tid != late {
				var tids []int
				for _, th := range proc.Threads {
					tids = append(tids, th.Tid)
				}
				t.Fatalf("threads %v, want only %d", tids, late)
			}
			// A busy thread, but on a loaded machine it may get a small
			// share of a CPU.
			margin(t, "late thread samples", float64(proc.Threads[0].Samples.Len()), 20)
			if n := proc.Threads[0].Samples.Len(); n < 20 {
				t.Errorf("%d samples of a busy thread in 0.8 s", n)
			}
			rep := runReport(t, out)
			for _, fn := range []string{"spin_late", "burn"} {
				if _, ok := findFunc(rep.All.TopTotal, fn); !ok {
					t.Errorf("no %s: frames not named; top: %v", fn, rep.All.TopTotal)
				}
			}
			if _, ok := findFunc(rep.All.TopTotal, "spin_main"); ok {
				t.Errorf("spin_main, of the main thread, was sampled")
			}
		})
	}
}

// TestRecordPidOfThread: -p with a thread id records that thread's whole
// process, and says so, with each backend.
func TestRecordPidOfThread(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			spin, late := startSpin2(t)
			pid := spin.Process.Pid
			out := filepath.Join(t.TempDir(), "p.json.gz")
			r := mustRecord(t, "--backend", be, "-d", "0.6", "-p", strconv.Itoa(late), "-o", out)
			if want := fmt.Sprintf("%d is a thread of process %d", late, pid); !strings.Contains(r.stderr, want) {
				t.Errorf("stderr %q does not say %q", r.stderr, want)
			}
			p := r.profile
			if len(p.Processes) != 1 || p.Processes[0].Pid != pid || p.Processes[0].Name != "spin" || len(p.Processes[0].Threads) != 2 {
				t.Fatalf("want process spin pid %d with its 2 threads, got %d processes, first %q pid %d", pid, len(p.Processes), p.Processes[0].Name, p.Processes[0].Pid)
			}
		})
	}
}

// TestRecordRefusedTargets: gprof's own pid (here through a shell that
// execs gprof with its own $$) is a usage error, exit 2; a kernel thread
// is an error, exit 1; with each backend, one line, no profile.
func TestRecordRefusedTargets(t *testing.T) {
	dir := t.TempDir()
	for _, be := range backends {
		t.Run("self/"+be, func(t *testing.T) {
			out := filepath.Join(dir, "self.json")
			cmd := exec.Command("sh", "-c", `exec "$0" record --backend "$1" -d 1 -p $$ -o "$2"`, gprofBin, be, out)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Errorf("exit %v, want 2: %s", err, stderr.String())
			}
			if s := stderr.String(); strings.Count(s, "\n") != 1 || !strings.Contains(s, "is gprof itself") {
				t.Errorf("stderr %q, want one line saying it is gprof itself", s)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a profile was written")
			}
		})
		t.Run("kthread/"+be, func(t *testing.T) {
			kthread := 0
			for _, pid := range []int{2, 3, 4} {
				if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); len(b) > 0 && !bytes.Contains(b, []byte("(init)")) {
					if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil && exe == "" {
						kthread = pid
						break
					}
				}
			}
			if kthread == 0 {
				t.Skip("no kernel thread visible (a pid namespace?)")
			}
			out := filepath.Join(dir, "k.json")
			r := gprof(t, "record", "--backend", be, "-d", "1", "-p", strconv.Itoa(kthread), "-o", out)
			oneErrorLine(t, r, "kernel thread")
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a profile was written")
			}
		})
	}
}
