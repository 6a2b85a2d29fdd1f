//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// gprof dump: every thread's stack of a hung program, checked against
// gdb's "thread apply all bt" on the same process, and against the source
// lines the program's Python threads hang on.

// dumpJSON is the part of gprof dump --json the tests read.
type dumpJSONOut struct {
	Version   int `json:"version"`
	Processes []struct {
		Pid       int     `json:"pid"`
		Name      string  `json:"name"`
		StoppedMs float64 `json:"stopped_ms"`
		Threads   []struct {
			Tid    int    `json:"tid"`
			Name   string `json:"name"`
			State  string `json:"state"`
			Error  string `json:"error"`
			Frames []struct {
				Address  string `json:"address"`
				Function string `json:"function"`
				File     string `json:"file"`
				Line     int    `json:"line"`
				Python   bool   `json:"python"`
				Inlined  bool   `json:"inlined"`
			} `json:"frames"`
		} `json:"threads"`
	} `json:"processes"`
}

// startHung starts a program that prints "ready" once it hangs.
func startHung(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("%s did not get ready: %q %v", cmd.Path, line, err)
	}
	return cmd.Process.Pid
}

// waitStill waits until no thread of pid has given up its CPU for a
// while (each one blocks for good or spins), so that a dump and gdb's
// backtraces taken next see the same stacks. A program that prints
// "ready" may still be on its way: CPython's main thread, after the
// write, takes the GIL back from a spinning thread and drops it again to
// wait, and blocks on the GIL's mutex for as long as that thread is off
// its CPU holding it, which a busy machine makes milliseconds. Each step
// of such a way is a voluntary context switch. It gives up after a few
// seconds with a log line; the comparison that follows then says what
// moved.
func waitStill(t *testing.T, pid int) {
	t.Helper()
	switches := func() map[string]string {
		m := map[string]string{}
		dir := fmt.Sprintf("/proc/%d/task", pid)
		tasks, _ := os.ReadDir(dir)
		for _, task := range tasks {
			b, err := os.ReadFile(filepath.Join(dir, task.Name(), "status"))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
					m[task.Name()] = strings.TrimSpace(v)
				}
			}
		}
		return m
	}
	const still, giveUp = 100 * time.Millisecond, 5 * time.Second
	last, since, start := switches(), time.Now(), time.Now()
	for time.Since(since) < still {
		if time.Since(start) > giveUp {
			t.Logf("pid %d's threads still switch after %v: %v", pid, giveUp, last)
			return
		}
		time.Sleep(10 * time.Millisecond)
		if now := switches(); !maps.Equal(now, last) {
			last, since = now, time.Now()
		}
	}
}

func dumpOf(t *testing.T, pid int, extra ...string) dumpJSONOut {
	t.Helper()
	r := gprof(t, append([]string{"dump", "--json", "-p", strconv.Itoa(pid)}, extra...)...)
	if r.code != 0 {
		t.Fatalf("gprof dump -p %d: exit %d: %s", pid, r.code, r.stderr)
	}
	var d dumpJSONOut
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("dump --json: %v\n%s", err, r.stdout)
	}
	if len(d.Processes) != 1 {
		t.Fatalf("dump of one process has %d", len(d.Processes))
	}
	margin(t, "process held stopped (ms)", d.Processes[0].StoppedMs, 1000)
	return d
}

// gdbFrame is a frame of gdb's backtrace; replaced says it is, or is
// inlined into, a call of CPython's eval function, whose frames gprof
// replaces with the Python frames it ran.
type gdbFrame struct {
	fn       string
	replaced bool
}

// gdbBacktraces runs gdb's "thread apply all bt" on pid (past main, as
// gprof shows) and returns each thread's frames, innermost first, by LWP.
func gdbBacktraces(t *testing.T, pid int) map[int][]gdbFrame {
	t.Helper()
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Skip("gdb is not installed")
	}
	out, err := exec.Command("gdb", "-nx", "-p", strconv.Itoa(pid), "-batch", "-ex", "set pagination off",
		"-ex", "set backtrace past-main on", "-ex", "thread apply all bt").CombinedOutput()
	if err != nil {
		t.Fatalf("gdb: %v\n%s", err, out)
	}
	threadRe := regexp.MustCompile(`^Thread \d+ \(.*LWP (\d+)`)
	frameRe := regexp.MustCompile(`^#\d+\s+(0x[0-9a-f]+ in )?(\S+) \(`)
	bts := map[int][]gdbFrame{}
	lwp, group := 0, 0
	for _, line := range strings.Split(string(out), "\n") {
		if m := threadRe.FindStringSubmatch(line); m != nil {
			lwp, _ = strconv.Atoi(m[1])
			group = 0
			continue
		}
		m := frameRe.FindStringSubmatch(line)
		if m == nil || lwp == 0 {
			continue
		}
		if m[2] != "??" {
			bts[lwp] = append(bts[lwp], gdbFrame{fn: m[2]})
		}
		if m[1] != "" {
			// The frames since the last one with an address are
			// inlined into this one's function: one physical frame.
			fs := bts[lwp]
			eval := false
			for _, f := range fs[group:] {
				eval = eval || f.fn == "_PyEval_EvalFrameDefault"
			}
			for i := group; i < len(fs); i++ {
				fs[i].replaced = eval
			}
			group = len(fs)
		}
	}
	if len(bts) == 0 {
		t.Fatalf("no backtraces in gdb's output:\n%s", out)
	}
	return bts
}

// sameFunction compares a gprof name with gdb's: gdb shows a C function
// by its symbol (__GI___clock_nanosleep) where DWARF may name it plainly.
func sameFunction(a, b string) bool {
	trim := func(s string) string {
		s = strings.TrimPrefix(s, "__GI_")
		return strings.TrimLeft(s, "_")
	}
	return a == b || trim(a) == trim(b)
}

// unnamedFunction reports whether fn is the name gprof gives code no
// symbol names ("sub_" and its start, see symbolize): gdb may know a name
// for it (from debug files gprof was not given), so it says nothing.
func unnamedFunction(fn string) bool {
	hex, ok := strings.CutPrefix(fn, "sub_")
	if !ok || hex == "" {
		return false
	}
	_, err := strconv.ParseUint(hex, 16, 64)
	return err == nil
}

// checkAgainstGDB checks each thread's native frames in the dump against
// gdb's backtrace of the same thread: gprof's frames must be gdb's, in
// gdb's order, and cover most of them. gdb shows frames that are not on
// the stack (tail calls, rebuilt from DWARF call sites) and inlined
// functions gprof's symbolizer may not, and gprof shows Python frames in
// place of CPython's eval function; a running thread's innermost frames
// differ between two stops, so they are compared from the first frame
// both have. ownFuncs, the program's own functions, must be in both.
func checkAgainstGDB(t *testing.T, d dumpJSONOut, gdb map[int][]gdbFrame, ownFuncs []string) {
	t.Helper()
	for _, th := range d.Processes[0].Threads {
		frames, ok := gdb[th.Tid]
		if !ok {
			t.Errorf("thread %d: not in gdb's output", th.Tid)
			continue
		}
		var got []string
		for _, f := range th.Frames {
			if !f.Python && f.Function != "" && !unnamedFunction(f.Function) {
				got = append(got, f.Function)
			}
		}
		in := func(fn string, list []gdbFrame) int {
			for i, w := range list {
				if sameFunction(fn, w.fn) {
					return i
				}
			}
			return -1
		}
		// A Go thread's stack continues past runtime.mcall on the
		// scheduler's own stack (g0), which gdb follows and gprof's
		// unwinder does not.
		for i, f := range frames {
			if f.fn == "runtime.mcall" {
				frames = frames[:i+1]
				break
			}
		}
		if th.State == "R" {
			// A running thread moved between gprof's dump and gdb's:
			// only the outer part of its stack, from the root to where
			// the two first differ, is the same instant's. (Aligning
			// them at the first leaf frame both have failed where that
			// leaf is a helper called from both places: get_state
			// under _PyObject_Malloc in gdb's, under _PyObject_Free in
			// gprof's.) At least three frames, or all of gprof's, must
			// agree from the root.
			gi, fi, common := len(got)-1, len(frames)-1, 0
			for gi >= 0 && fi >= 0 {
				switch {
				case sameFunction(got[gi], frames[fi].fn):
					common++
					gi--
					fi--
					continue
				case frames[fi].replaced:
					fi--
					continue
				}
				break
			}
			if want := min(3, len(got)); common < want {
				t.Errorf("thread %d %q (running): gprof's and gdb's stacks share %d frames from the root, want %d: %q against %v", th.Tid, th.Name, common, want, got, frames)
			}
			got, frames = got[gi+1:], frames[fi+1:]
		}
		// gprof's frames, in order, as a subsequence of gdb's.
		j, matched := 0, 0
		var missed []string
		for _, g := range got {
			for j < len(frames) && !sameFunction(g, frames[j].fn) {
				if !frames[j].replaced {
					missed = append(missed, frames[j].fn)
				}
				j++
			}
			if j == len(frames) {
				break
			}
			matched++
			j++
		}
		if matched != len(got) {
			t.Errorf("thread %d %q: gprof's frames %q are not gdb's %v in order", th.Tid, th.Name, got, frames)
		}
		comparable := 0
		for _, f := range frames {
			if !f.replaced {
				comparable++
			}
		}
		if comparable > 0 {
			cover := float64(matched) / float64(comparable)
			margin(t, fmt.Sprintf("thread %d (%s) share of gdb's frames gprof shows", th.Tid, th.State), cover, 0.75)
			if len(missed) > 0 {
				t.Logf("thread %d: gdb's frames gprof lacks: %q", th.Tid, missed)
			}
			if cover < 0.75 {
				t.Errorf("thread %d %q: gprof shows %d of gdb's %d frames: %q against %v", th.Tid, th.Name, matched, comparable, got, frames)
			}
		}
		for _, fn := range ownFuncs {
			if in(fn, frames) >= 0 && slices.Index(got, fn) < 0 {
				t.Errorf("thread %d %q: gdb shows %s, gprof does not: %q", th.Tid, th.Name, fn, got)
			}
		}
	}
}

func TestDumpHungC(t *testing.T) {
	bin := buildC(t, "hang")
	pid := startHung(t, exec.Command(bin))
	d := dumpOf(t, pid)
	assertUnharmed(t, pid)
	gdb := gdbBacktraces(t, pid)
	assertUnharmed(t, pid)
	checkAgainstGDB(t, d, gdb, []string{"wait_for_signal", "waiter", "spin_forever", "spinner", "sleep_forever", "main"})
	states := map[string]string{}
	for _, th := range d.Processes[0].Threads {
		states[th.Name] = th.State
	}
	if states["spinner"] != "R" || states["waiter"] != "S" {
		t.Errorf("thread states %v: want spinner R (running), waiter S (sleeping)", states)
	}
	// Text: each thread named, with its state and frames.
	r := gprof(t, "dump", "-p", strconv.Itoa(pid))
	for _, want := range []string{fmt.Sprintf("Process %d (", pid), `"waiter" (sleeping`, `"spinner" (running)`, "in spin_forever at ", "hang.c:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("text dump lacks %q:\n%s", want, r.stdout)
		}
	}
	if !regexp.MustCompile(`stopped for [0-9.]+ (ms|µs)`).MatchString(r.stdout) {
		t.Errorf("text dump does not say how long the process was stopped:\n%s", r.stdout)
	}
}

func TestDumpHungGo(t *testing.T) {
	bin := filepath.Join(fixtures, "gohang")
	if _, err := os.Stat(bin); err != nil {
		if out, err := rootCommand("go", "build", "-o", bin, "./testdata/gohang").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	// gdb stops the threads seconds after gprof has let them go: no
	// preemption signals (SIGURG every 10 ms to the spinning goroutine),
	// which set the scheduler's threads moving, so that they are where
	// they were.
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1")
	pid := startHung(t, cmd)
	// A dump that caught the spinning thread in a signal handler, whose
	// frames the unwinder does not cross, is taken again.
	var d dumpJSONOut
	for try := 1; ; try++ {
		d = dumpOf(t, pid)
		spun := false
		for _, th := range d.Processes[0].Threads {
			for _, f := range th.Frames {
				spun = spun || f.Function == "main.spinForever"
			}
		}
		if spun {
			break
		}
		if try == 3 {
			t.Fatalf("no thread is in main.spinForever in 3 dumps: %+v", d.Processes[0].Threads)
		}
		t.Logf("dump %d caught the spinning thread out of main.spinForever (in its preemption signal's handler?); again", try)
	}
	gdb := gdbBacktraces(t, pid)
	assertUnharmed(t, pid)
	checkAgainstGDB(t, d, gdb, []string{"main.spinForever", "main.main.func1", "runtime.futex"})
}

// hangLines finds the lines of a source file marked "hangs here: NAME"
// or "spins here: NAME", by NAME.
func hangLines(t *testing.T, path string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	re := regexp.MustCompile(`# (?:hangs|spins) here: (\w+)`)
	for i, l := range strings.Split(string(data), "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			lines[m[1]] = i + 1
		}
	}
	return lines
}

func TestDumpHungPython(t *testing.T) {
	script := repoPath("testdata", "python", "hang.py")
	lines := hangLines(t, script)
	for name, py := range pythons(t) {
		t.Run(name, func(t *testing.T) {
			pid := startHung(t, exec.Command(py, script))
			waitStill(t, pid)
			// Each thread's Python frames show the functions it
			// hangs in at the lines it hangs on (a spinning loop may
			// be on its while line, one above). off lists those that
			// do not.
			off := func(d dumpJSONOut) (off []string, found map[string]bool) {
				found = map[string]bool{}
				for _, th := range d.Processes[0].Threads {
					for _, f := range th.Frames {
						want, ok := lines[f.Function]
						if !f.Python || !ok || filepath.Base(f.File) != "hang.py" {
							continue
						}
						found[f.Function] = true
						if f.Line != want && !(f.Function == "spin" && f.Line == want-1) {
							off = append(off, fmt.Sprintf("thread %d: %s at line %d, want %d", th.Tid, f.Function, f.Line, want))
						}
					}
				}
				return off, found
			}
			// The main thread prints "ready" just before it hangs, and
			// its print waits for the spinning thread to let go of the
			// GIL (up to its 5 ms switch interval): a dump that caught
			// it there, still on the line before, is taken again.
			var d dumpJSONOut
			for try := 1; ; try++ {
				d = dumpOf(t, pid)
				o, _ := off(d)
				if len(o) == 0 || try == 5 {
					break
				}
				t.Logf("dump %d caught a thread on its way to where it hangs (%s); again", try, strings.Join(o, "; "))
				time.Sleep(100 * time.Millisecond)
			}
			gdb := gdbBacktraces(t, pid)
			assertUnharmed(t, pid)
			checkAgainstGDB(t, d, gdb, nil)
			o, found := off(d)
			for _, msg := range o {
				t.Error(msg)
			}
			for fn := range lines {
				if !found[fn] {
					t.Errorf("no thread's innermost Python frame is %s (line %d)", fn, lines[fn])
				}
			}
		})
	}
}

// Under a seccomp filter that denies perf_event_open (as some containers'
// policies do), record's perf backend is refused and dump works all the
// same: it needs ptrace alone. And as an unprivileged user, dump works on
// that user's own processes.
func TestDumpWherePerfIsDenied(t *testing.T) {
	bin := buildC(t, "hang")
	pid := startHung(t, exec.Command(bin))
	run := func(args ...string) result {
		cmd := exec.Command(gprofBin, args...)
		cmd.Env = append(os.Environ(), denyPerfEnv+"=1")
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return result{o.String(), e.String(), code}
	}
	r := run("record", "--backend", "perf", "-o", filepath.Join(t.TempDir(), "p.json.gz"), "-d", "0.2", "-p", strconv.Itoa(pid))
	if r.code == 0 || !strings.Contains(r.stderr, "perf_event_open") {
		t.Fatalf("perf events are not denied under the filter: exit %d: %s", r.code, r.stderr)
	}
	t.Logf("record --backend perf under the filter: %s", firstLine(r.stderr))
	r = run("dump", "-p", strconv.Itoa(pid))
	if r.code != 0 || !strings.Contains(r.stdout, "spin_forever") || !strings.Contains(r.stdout, "wait_for_signal") {
		t.Fatalf("dump under the filter: exit %d: %s\n%s", r.code, r.stderr, r.stdout)
	}
	assertUnharmed(t, pid)

	if os.Geteuid() != 0 {
		t.Skip("needs root to run as another user")
	}
	if err := os.Chmod(fixtures, 0o755); err != nil {
		t.Fatal(err)
	}
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	target := exec.Command(bin)
	target.SysProcAttr = nobody
	npid := startHung(t, target)
	cmd := exec.Command(gprofBin, "dump", "-p", strconv.Itoa(npid))
	cmd.SysProcAttr = nobody
	cmd.Dir = os.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "spin_forever") {
		t.Fatalf("dump as nobody of nobody's process: %v\n%s", err, out)
	}
	// Not another user's process: one line, exit 1.
	cmd = exec.Command(gprofBin, "dump", "-p", strconv.Itoa(pid))
	cmd.SysProcAttr = nobody
	cmd.Dir = os.TempDir()
	var e strings.Builder
	cmd.Stderr = &e
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || strings.Count(strings.TrimSpace(e.String()), "\n") != 0 {
		t.Errorf("dump as nobody of root's process: %v, want exit 1 and one line: %q", err, e.String())
	}
	assertUnharmed(t, pid)
}

// dump --timeout runs a command as timeout(1) does; when it runs out of
// time, every process's stacks come first, then SIGTERM, and exit 124.
func TestDumpOnTimeout(t *testing.T) {
	bin := buildC(t, "hang")
	dir := t.TempDir()
	out := filepath.Join(dir, "dump.txt")
	start := time.Now()
	// A shell that starts the hung program: two processes to dump.
	r := gprof(t, "dump", "--timeout", "1.5s", "-o", out, "--", "sh", "-c", bin+"; true")
	elapsed := time.Since(start)
	if r.code != 124 {
		t.Fatalf("exit %d, want 124: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "timed out after 1.5s") {
		t.Errorf("stderr does not say the command timed out: %s", r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(data), "Process ") != 2 || !strings.Contains(string(data), "spin_forever") {
		t.Errorf("the dump has not both processes' stacks:\n%s", data)
	}
	margin(t, "timeout to exit (s)", elapsed.Seconds(), 1.5+10)
	// A command that ends in time: its own status, no dump.
	r = gprof(t, "dump", "--timeout", "30s", "--", "sh", "-c", "exit 3")
	if r.code != 3 || strings.Contains(r.stderr, "Process") {
		t.Errorf("a command that exits 3 in time: exit %d, stderr %q", r.code, r.stderr)
	}
}

// Bad input: one line, exit 1 or 2, nothing else.
func TestDumpBadInput(t *testing.T) {
	r := gprof(t, "dump", "-p", "999999999")
	oneErrorLine(t, r, "999999999")
	r = gprof(t, "dump")
	if r.code != 2 || !strings.Contains(r.stderr, "-p PID") {
		t.Errorf("dump alone: exit %d: %s", r.code, r.stderr)
	}
	r = gprof(t, "dump", "-p", "1", "--timeout", "1s", "--", "true")
	if r.code != 2 {
		t.Errorf("dump -p with --timeout: exit %d: %s", r.code, r.stderr)
	}
}

// denyPerfEnv, set for the test binary run as gprof, makes it deny itself
// perf_event_open with a seccomp filter, as a container's policy would.
const denyPerfEnv = "GPROF_TEST_DENY_PERF"

func init() {
	if os.Getenv(runAsGprof) != "1" || os.Getenv(denyPerfEnv) != "1" || runtime.GOARCH != "amd64" {
		return
	}
	// A classic BPF program: the syscall number (seccomp_data.nr, at 0)
	// is perf_event_open? Then EACCES; else allow. The architecture
	// (at 4) must be x86-64's.
	const (
		ldW   = 0x20 // BPF_LD|BPF_W|BPF_ABS
		jeqK  = 0x15 // BPF_JMP|BPF_JEQ|BPF_K
		retK  = 0x06 // BPF_RET|BPF_K
		arch  = 0xc000003e
		allow = 0x7fff0000
		errno = 0x00050000 | uint32(unix.EACCES)
	)
	prog := []unix.SockFilter{
		{Code: ldW, K: 4},
		{Code: jeqK, Jt: 1, Jf: 0, K: arch},
		{Code: retK, K: allow},
		{Code: ldW, K: 0},
		{Code: jeqK, Jt: 0, Jf: 1, K: unix.SYS_PERF_EVENT_OPEN},
		{Code: retK, K: errno},
		{Code: retK, K: allow},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		panic(err)
	}
	// Every thread of the process (Go has started several by now).
	const tsync = 1 // SECCOMP_FILTER_FLAG_TSYNC
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, 1 /* SECCOMP_SET_MODE_FILTER */, tsync, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		panic(e)
	}
}
