//go:build linux

// Package e2e holds gprof's end-to-end tests: the test binary runs as gprof
// itself (TestMain), builds small C and Go programs with gcc and go, and
// profiles them for real with perf events and ptrace. They need what CI has:
// root (or a permissive perf_event_paranoid), gcc and readelf; ./test.sh
// installs the rest.
//
// This file is their one harness: running gprof (gprof, startGprof, and
// mustRecord for the common record → skip if perf is refused → check the
// exit code → read the profile), the programs they profile (buildC,
// startSpin), what they read back (readRaw, runReport, collapsed,
// reportThreads) and checks several topics share. A helper one topic's
// file alone uses stays in that file. Paths to the repository's own files
// (testdata/, README.md, docs/) go through repoPath: the tests run in e2e/.
package e2e

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
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/cmd"
	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/profile"
)

var (
	gprofBin string // the gprof under test
	fixtures string // directory of built test programs
	root     string // the repository's root directory
)

// runAsGprof, set in the environment, makes the test binary act as gprof
// itself (the cmd/nm pattern): the tests run the very code they were built
// from, with no second build.
const runAsGprof = "GPROF_TEST_RUN_AS_GPROF"

func TestMain(m *testing.M) {
	if os.Getenv(runAsGprof) == "1" {
		attach.ExecHelperMain()
		os.Exit(cmd.Main(os.Args))
	}
	dir, err := os.MkdirTemp("", "gprof-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		fixtures = dir
		if root, err = findRoot(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// A copy in the fixtures directory, which tests open to other
		// users; go test's own build directory is private.
		gprofBin = filepath.Join(dir, "gprof")
		self, err := os.Executable()
		if err == nil {
			err = copyExecutable(self, gprofBin)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "copying the test binary to run as gprof: %v\n", err)
			return 1
		}
		os.Setenv(runAsGprof, "1")
		return m.Run()
	}()
	os.Exit(code)
}

// findRoot returns the repository's root: the nearest directory up from
// the working directory (go test's is e2e/) that holds go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run the end-to-end tests inside the repository")
		}
		dir = parent
	}
}

// repoPath names a file of the repository by its path from the root
// ("testdata/split.c"), whatever the working directory.
func repoPath(elem ...string) string {
	return filepath.Join(append([]string{root}, elem...)...)
}

// rootCommand is exec.Command run in the repository's root, for the
// compilers that build the tests' programs from testdata/: gcc given a
// relative source path records it as relative in the debug information,
// beside the compilation directory (which gprof view's source service
// relies on, and its tests check), so they are given the same paths, from
// the same directory, as when the tests lived at the root.
func rootCommand(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	return cmd
}

func copyExecutable(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}

// buildC compiles testdata/NAME.c once per test binary run.
func buildC(t *testing.T, name string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed (./test.sh installs it)")
	}
	out := filepath.Join(fixtures, name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	args := append([]string{"-O2", "-g", "-pthread", "-o", out, filepath.Join("testdata", name+".c")}, flags...)
	if b, err := rootCommand("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", name, err, b)
	}
	return out
}

type result struct {
	stdout, stderr string
	code           int
}

// gprof runs the gprof under test.
func gprof(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(gprofBin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := result{o.String(), e.String(), 0}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run gprof: %v", err)
	}
	return r
}

// skipIfNoPerf skips when the kernel forbids perf events altogether, the
// one case where these tests cannot run.
func skipIfNoPerf(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 && strings.Contains(r.stderr, "permission") && !strings.Contains(r.stderr, "ptrace") {
		t.Skipf("perf events are not permitted here: %s", r.stderr)
	}
}

// recording is what one gprof record left behind: its output and exit
// code, and the profile it wrote.
type recording struct {
	result
	out     string           // the profile's path (-o)
	profile *profile.Profile // the profile, read back
}

// mustRecord runs gprof record with args (the words after "record"), skips
// the test where the kernel refuses perf events, fails it unless gprof
// exits 0, and reads back the profile it wrote. Without -o among args, the
// profile goes to a file in t.TempDir().
func mustRecord(t *testing.T, args ...string) recording {
	t.Helper()
	return mustRecordExit(t, 0, args...)
}

// mustRecordExit is mustRecord for a recording that ends with exit code
// code and writes its profile all the same: 4 when the launched command
// fails, 5 when the push fails.
func mustRecordExit(t *testing.T, code int, args ...string) recording {
	t.Helper()
	out := ""
	for i, a := range args {
		if a == "--" {
			break
		}
		if a == "-o" && i+1 < len(args) {
			out = args[i+1]
		}
	}
	if out == "" {
		out = filepath.Join(t.TempDir(), "p.json.gz")
		args = append([]string{"-o", out}, args...)
	}
	r := gprof(t, append([]string{"record"}, args...)...)
	skipIfNoPerf(t, r)
	if r.code != code {
		t.Fatalf("gprof record %s: exit %d, want %d: %s", strings.Join(args, " "), r.code, code, r.stderr)
	}
	p, err := gecko.ReadFile(out)
	if err != nil {
		t.Fatalf("the profile of gprof record %s: %v", strings.Join(args, " "), err)
	}
	return recording{r, out, p}
}

// readRaw decodes a (possibly gzipped) JSON profile into generic values,
// for checks on the exact bytes the Firefox Profiler will see.
func readRaw(t *testing.T, path string) map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	// By its magic: the windows of record --switch-output are gzipped
	// and named OUTPUT.TIME.
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	var v map[string]any
	if err := json.NewDecoder(r).Decode(&v); err != nil {
		t.Fatalf("%s is not JSON: %v", path, err)
	}
	return v
}

// workerCPU parses split's "thread TID cpu_ns N" lines.
func workerCPU(t *testing.T, out string) map[int]int64 {
	t.Helper()
	m := map[int]int64{}
	for _, mt := range regexp.MustCompile(`thread (\d+) cpu_ns (\d+)`).FindAllStringSubmatch(out, -1) {
		tid, _ := strconv.Atoi(mt[1])
		ns, _ := strconv.ParseInt(mt[2], 10, 64)
		m[tid] = ns
	}
	if len(m) == 0 {
		t.Fatalf("no per-thread CPU times in the program's output: %q", out)
	}
	return m
}

func readelfBuildID(t *testing.T, path string) []byte {
	t.Helper()
	out, err := exec.Command("readelf", "-n", path).Output()
	if err != nil {
		t.Skipf("readelf: %v", err)
	}
	m := regexp.MustCompile(`Build ID: ([0-9a-f]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("readelf -n %s shows no build-id", path)
	}
	var b []byte
	for i := 0; i+1 < len(m[1]); i += 2 {
		v, _ := strconv.ParseUint(string(m[1][i:i+2]), 16, 8)
		b = append(b, byte(v))
	}
	return b
}

type reportJSON struct {
	Samples int64 `json:"samples"`
	All     struct {
		TopSelf  []reportFunc `json:"top_self"`
		TopTotal []reportFunc `json:"top_total"`
	} `json:"all"`
}

type reportFunc struct {
	Name     string  `json:"name"`
	File     string  `json:"file"`
	Line     int     `json:"line"`
	SelfPct  float64 `json:"self_pct_all"`
	TotalPct float64 `json:"total_pct_all"`
}

func runReport(t *testing.T, path string, extra ...string) reportJSON {
	t.Helper()
	r := gprof(t, append([]string{"report", "--json", "--top", "-1", path}, extra...)...)
	if r.code != 0 {
		t.Fatalf("gprof report: exit %d: %s", r.code, r.stderr)
	}
	var rep reportJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report --json is not JSON: %v\n%s", err, r.stdout)
	}
	return rep
}

// margin logs a checked figure beside its bound, so that the verbose log
// of runs on a loaded machine shows how near each check comes to failing.
func margin(t testing.TB, what string, got, bound float64) {
	t.Helper()
	t.Logf("margin: %s %.4g, bound %.4g", what, got, bound)
}

func findFunc(fs []reportFunc, name string) (reportFunc, bool) {
	for _, f := range fs {
		if f.Name == name {
			return f, true
		}
	}
	return reportFunc{}, false
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// startSpin starts the attach target and waits until it runs.
func startSpin(t *testing.T) *exec.Cmd {
	t.Helper()
	bin := buildC(t, "spin")
	cmd := exec.Command(bin)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("spin said %q", line)
	}
	return cmd
}

// procState returns the state letter and TracerPid of every thread of pid.
func procState(t *testing.T, pid int) (states string, tracers []string) {
	t.Helper()
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "State:"); ok {
				states += strings.Fields(v)[0]
			}
			if v, ok := strings.CutPrefix(line, "TracerPid:"); ok && strings.TrimSpace(v) != "0" {
				tracers = append(tracers, task.Name()+":"+strings.TrimSpace(v))
			}
		}
	}
	return states, tracers
}

// assertUnharmed checks that a target runs on, untraced and not stopped.
func assertUnharmed(t *testing.T, pid int) {
	t.Helper()
	time.Sleep(50 * time.Millisecond)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("target %d is gone: %v", pid, err)
	}
	states, tracers := procState(t, pid)
	if strings.ContainsAny(states, "tT") {
		t.Errorf("target %d left stopped: thread states %q", pid, states)
	}
	if len(tracers) > 0 {
		t.Errorf("target %d still traced: %v", pid, tracers)
	}
}

var backends = []string{"perf", "ptrace"}

// bgGprof is a gprof running in the background, for tests that signal it.
type bgGprof struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{} // closed once cmd.Wait returned
}

// startGprof starts gprof in the background. stdout, if not nil, gets
// its standard output.
func startGprof(t *testing.T, stdout io.Writer, args ...string) *bgGprof {
	t.Helper()
	g := &bgGprof{cmd: exec.Command(gprofBin, args...), done: make(chan struct{})}
	g.cmd.Stderr = &g.stderr
	g.cmd.Stdout = stdout
	// A launched command that outlives a killed gprof holds the pipes
	// open; do not wait for it to close them.
	g.cmd.WaitDelay = time.Second
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { g.cmd.Wait(); close(g.done) }()
	t.Cleanup(func() { g.cmd.Process.Kill(); <-g.done })
	return g
}

// exited reports whether gprof ends within d.
func (g *bgGprof) exited(d time.Duration) bool {
	select {
	case <-g.done:
		return true
	case <-time.After(d):
		return false
	}
}

// skipIfNoBackend skips when a gprof that ended early was refused the
// backend by the kernel.
func skipIfNoBackend(t *testing.T, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "permission") || strings.Contains(stderr, "not permitted") {
		t.Skipf("backend not permitted here: %s", stderr)
	}
}

// oneErrorLine checks the CLI's error contract: exit 1 and exactly one
// "gprof: error:" line, no Go panic or stack trace.
func oneErrorLine(t *testing.T, r result, mention string) {
	t.Helper()
	if r.code != 1 {
		t.Errorf("exit %d, want 1 (stderr %q)", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "gprof: error: ") {
		t.Errorf("want exactly one 'gprof: error:' line, got %q", r.stderr)
	}
	if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
		t.Errorf("Go panic: %s", r.stderr)
	}
	if mention != "" && !strings.Contains(r.stderr, mention) {
		t.Errorf("error %q does not mention %q", r.stderr, mention)
	}
}

// dirNames lists a directory's entries, to find leftover temporary files.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// faultReport is the part of 'report --json' these tests read: which
// functions, in which libs, each thread of each process ran.
type faultReport struct {
	Samples int64 `json:"samples"`
	Threads []struct {
		Pid         int    `json:"pid"`
		ProcessName string `json:"process_name"`
		Tid         int    `json:"tid"`
		Samples     int64  `json:"samples"`
		TopSelf     []struct {
			Name        string `json:"name"`
			Lib         string `json:"lib"`
			File        string `json:"file"`
			SelfSamples int64  `json:"self_samples"`
		} `json:"top_self"`
	} `json:"threads"`
}

func reportThreads(t *testing.T, path string) faultReport {
	t.Helper()
	r := gprof(t, "report", "--json", "--top", "-1", path)
	if r.code != 0 {
		t.Fatalf("gprof report: exit %d: %s", r.code, r.stderr)
	}
	var rep faultReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report --json: %v", err)
	}
	return rep
}

// selfSamples sums the self samples of function fn over the threads of
// processes named proc ("" for any).
func (r faultReport) selfSamples(proc, fn string) int64 {
	var n int64
	for _, th := range r.Threads {
		if proc != "" && th.ProcessName != proc {
			continue
		}
		for _, f := range th.TopSelf {
			if f.Name == fn {
				n += f.SelfSamples
			}
		}
	}
	return n
}

// samplesByTid counts samples per thread over all processes.
func samplesByTid(p *profile.Profile) map[int]int {
	m := map[int]int{}
	for _, proc := range p.Processes {
		for _, th := range proc.Threads {
			m[th.Tid] += th.Samples.Len()
		}
	}
	return m
}

// childrenOf lists the pids whose parent is ppid.
func childrenOf(ppid int) []int {
	var kids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if parentOf(pid) == ppid {
			kids = append(kids, pid)
		}
	}
	return kids
}

// parentOf returns pid's parent pid, 0 if unknown.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		if f := strings.Fields(s[i+1:]); len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			return ppid
		}
	}
	return 0
}

// killAndForget kills a process that is not the test's child (so cannot
// be waited for) and waits until it is gone.
func killAndForget(pid int) {
	syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// collapsed returns a thread's stacks ("a;b;c" root first) and counts.
func collapsed(t *testing.T, path, thread string) map[string]int {
	t.Helper()
	r := gprof(t, "report", "--format", "collapsed", "--thread", thread, path)
	if r.code != 0 {
		t.Fatalf("gprof report: exit %d: %s", r.code, r.stderr)
	}
	m := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		i := strings.LastIndexByte(sc.Text(), ' ')
		n, err := strconv.Atoi(sc.Text()[i+1:])
		if i < 0 || err != nil {
			t.Fatalf("bad collapsed line %q", sc.Text())
		}
		m[sc.Text()[:i]] += n
	}
	return m
}

// writeTemp writes p to a temporary file, for the commands that read files.
func writeTemp(t *testing.T, p *profile.Profile) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.json.gz")
	if err := gecko.WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
	return path
}

// perfRecord runs 'perf record -o OUT ARGS...' and returns what it and
// its command printed; it skips the test when perf or perf events are
// unavailable. Tests point HOME at a temporary directory, where perf
// keeps its build-id cache (~/.debug) and gprof looks for it.
func perfRecord(t *testing.T, out string, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed (apt-get install linux-perf)")
	}
	cmd := exec.Command("perf", append([]string{"record", "-q", "-o", out}, args...)...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		s := string(b)
		if strings.Contains(s, "perf_event_paranoid") || strings.Contains(s, "Permission") || strings.Contains(s, "not supported") {
			t.Skipf("perf record cannot sample here: %s", firstLine(s))
		}
		t.Fatalf("perf record %v: %v\n%s", args, err, b)
	}
	return b
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
