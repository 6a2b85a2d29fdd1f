//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
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

	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/profile"
)

// record -D and --control, driven as pyperf's perf_record hook drives
// perf: testdata/python/pyperf_hook.py does what the hook does, around a
// benchmark whose phases are known, with gprof and with perf.

// hookPhase is one phase the harness reports: its bounds on the
// monotonic clock (s) and the CPU time it burned (s).
type hookPhase struct {
	name       string
	start, end float64
	cpu        float64
}

// runHook runs the harness with profiler (a command line) writing out,
// with extra as $PYPERF_PERF_RECORD_EXTRA_OPTS; it returns the phases and
// the harness's pid.
func runHook(t *testing.T, py, profiler, out, extra string) ([]hookPhase, int) {
	t.Helper()
	cmd := exec.Command(py, repoPath("testdata", "python", "pyperf_hook.py"), profiler, out)
	cmd.Env = append(os.Environ(), "PYPERF_PERF_RECORD_EXTRA_OPTS="+extra)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyperf_hook.py with %s: %v\n%s%s", profiler, err, stdout, stderr.String())
	}
	var phases []hookPhase
	for _, line := range strings.Split(string(stdout), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 5 && f[0] == "phase":
			p := hookPhase{name: f[1]}
			p.start, _ = strconv.ParseFloat(f[2], 64)
			p.end, _ = strconv.ParseFloat(f[3], 64)
			p.cpu, _ = strconv.ParseFloat(f[4], 64)
			phases = append(phases, p)
		case len(f) == 2 && f[0] == "exit" && f[1] != "0":
			t.Fatalf("%s exited %s under the hook (its output is thrown away, as pyperf does)", profiler, f[1])
		}
	}
	if len(phases) != 7 {
		t.Fatalf("the harness reported %d phases: %s", len(phases), stdout)
	}
	return phases, cmd.Process.Pid
}

// onWindows are the stretches of p with sampling on: between its paused
// ranges.
func onWindows(p *profile.Profile) [][2]int64 {
	var out [][2]int64
	at := int64(0)
	for _, r := range p.Meta.PausedRanges {
		if r.Start > at {
			out = append(out, [2]int64{at, r.Start})
		}
		if r.End < 0 {
			return out
		}
		at = r.End
	}
	return append(out, [2]int64{at, p.Meta.Duration})
}

// pyLabels counts the samples of p whose stacks hold each Python
// function.
func pyLabels(p *profile.Profile) map[string]int {
	n := map[string]int{}
	for _, pr := range p.Processes {
		for _, th := range pr.Threads {
			for _, st := range pySamples(th) {
				seen := map[string]bool{}
				for _, f := range st {
					if f.Category == profile.CategoryPython && !seen[f.Label] {
						seen[f.Label] = true
						n[f.Label]++
					}
				}
			}
		}
	}
	return n
}

// checkPhaseRatio checks samples against a phase's CPU time at 1 kHz.
func checkPhaseRatio(t *testing.T, what string, samples int, cpu float64, lo, hi float64) {
	t.Helper()
	want := cpu * 1000
	r := float64(samples) / want
	margin(t, fmt.Sprintf("%s: samples / (CPU × rate), %d / %.0f", what, samples, want), r, lo)
	if r < lo || r > hi {
		t.Errorf("%s: %d samples for %.3f s of CPU at 1 kHz: ratio %.3f, want %.2f to %.2f", what, samples, cpu, r, lo, hi)
	}
}

func TestPyperfHook(t *testing.T) {
	pys := pythons(t)
	py := pys["3.12"]
	if py == "" {
		for _, p := range pys {
			py = p
		}
	}
	for _, backend := range backends {
		for _, extra := range []string{"", "-D -1"} {
			t.Run(strings.TrimSpace(backend+" "+extra), func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "hook.json.gz")
				phases, _ := runHook(t, py, gprofBin, out, "-r 1000 --backend "+backend+" "+extra)
				p, err := gecko.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				checkHookProfile(t, p, phases, extra != "")
			})
		}
	}
	// The peer, on the same harness: perf, with CLOCK_MONOTONIC times to
	// place its samples in the phases.
	t.Run("perf itself", func(t *testing.T) {
		if _, err := exec.LookPath("perf"); err != nil {
			t.Skip("perf is not installed")
		}
		out := filepath.Join(t.TempDir(), "perf.data")
		phases, pid := runHook(t, py, "perf", out, "-e cpu-clock -c 1000000 -k CLOCK_MONOTONIC")
		script, err := exec.Command("perf", "script", "-i", out, "-F", "pid,time").Output()
		if err != nil {
			t.Fatalf("perf script: %v", err)
		}
		var times []float64
		for _, line := range strings.Split(string(script), "\n") {
			f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), ":"))
			if len(f) == 2 && f[0] == strconv.Itoa(pid) {
				v, _ := strconv.ParseFloat(strings.TrimSuffix(f[1], ":"), 64)
				times = append(times, v)
			}
		}
		in := func(ph hookPhase) int {
			n := 0
			for _, v := range times {
				if v >= ph.start && v <= ph.end {
					n++
				}
			}
			return n
		}
		measured, cpu := 0, 0.0
		for _, ph := range phases {
			switch ph.name {
			case "measured":
				measured += in(ph)
				cpu += ph.cpu
			case "between", "after":
				if n := in(ph); n != 0 {
					t.Errorf("perf: %d samples in a %s phase, with sampling disabled", n, ph.name)
				}
			}
		}
		checkPhaseRatio(t, "perf, the measured phases", measured, cpu, 0.85, 1.15)
	})
}

// checkHookProfile checks gprof's profile of the harness: sampling is off
// exactly where the hook turned it off (no sample dated there, none in the
// phases it covers), and each stretch with sampling on has the samples the
// phase's CPU time asks for.
func checkHookProfile(t *testing.T, p *profile.Profile, phases []hookPhase, delayed bool) {
	t.Helper()
	wins := onWindows(p)
	t.Logf("paused ranges %+v, on %v", p.Meta.PausedRanges, wins)
	// Three measured stretches; with -D -1 nothing else is on.
	if len(wins) != 3 {
		t.Fatalf("%d stretches with sampling on, want 3 (one per measured phase, the first with the phase before it unless -D -1): %v", len(wins), wins)
	}
	inPaused := 0
	counts := make([]int, len(wins))
	for _, pr := range p.Processes {
		for _, th := range pr.Threads {
			for _, tm := range th.Samples.Time {
				i := slices.IndexFunc(wins, func(w [2]int64) bool { return tm >= w[0] && tm <= w[1] })
				if i < 0 {
					inPaused++
					continue
				}
				counts[i]++
			}
		}
	}
	if inPaused > 0 {
		t.Errorf("%d samples dated while sampling was off", inPaused)
	}
	labels := pyLabels(p)
	t.Logf("samples by stretch %v; by Python function %v", counts, labels)
	for _, fn := range []string{"phase_between", "phase_after"} {
		if labels[fn] != 0 {
			t.Errorf("%d samples in %s, which ran with sampling off", labels[fn], fn)
		}
	}
	if delayed && labels["phase_before"] != 0 {
		t.Errorf("-D -1: %d samples in phase_before, which ran before sampling was enabled", labels["phase_before"])
	}
	if !delayed && labels["phase_before"] == 0 {
		t.Error("no sample in phase_before, which ran with sampling on (the hook passes no -D)")
	}
	var measured []hookPhase
	var before hookPhase
	for _, ph := range phases {
		switch ph.name {
		case "measured":
			measured = append(measured, ph)
		case "before":
			before = ph
		}
	}
	total, cpu := 0, 0.0
	for i, ph := range measured {
		n, c := counts[i], ph.cpu
		if i == 0 && !delayed {
			// The first stretch also holds phase_before: judged with
			// it, loosely (it may start before gprof has attached
			// on a loaded machine).
			checkPhaseRatio(t, "phase_before and the first measured phase", n, c+before.cpu, 0.6, 1.15)
			continue
		}
		checkPhaseRatio(t, fmt.Sprintf("measured phase %d", i+1), n, c, 0.75, 1.25)
		total += n
		cpu += c
	}
	checkPhaseRatio(t, "the measured phases pooled", total, cpu, 0.85, 1.15)
}

// -D MS: nothing is sampled in the first MS of the command, which runs
// meanwhile; the profile shows the stretch as paused.
func TestRecordDelay(t *testing.T) {
	bin := buildC(t, "split")
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			r := mustRecord(t, "--backend", backend, "-D", "400", "--", bin, "1", "1.2")
			pr := r.profile.Meta.PausedRanges
			if len(pr) != 1 || pr[0].Start != 0 || pr[0].End < 400e6 || pr[0].Reason != "profiler-paused" {
				t.Fatalf("paused ranges %+v: want one from 0 to 400 ms or later", pr)
			}
			first := int64(-1)
			n := 0
			for _, proc := range r.profile.Processes {
				for _, th := range proc.Threads {
					for _, tm := range th.Samples.Time {
						if first < 0 || tm < first {
							first = tm
						}
						n++
					}
				}
			}
			margin(t, "first sample after the delay (ms)", float64(first)/1e6, float64(pr[0].End)/1e6)
			if first < pr[0].End {
				t.Errorf("a sample at %.1f ms, before sampling started at %.1f ms", float64(first)/1e6, float64(pr[0].End)/1e6)
			}
			// The worker burned 1.2 s of CPU, some of it in the delay.
			cpu := 0.0
			for _, ns := range workerCPU(t, r.stdout) {
				cpu += float64(ns) / 1e9
			}
			if n == 0 || float64(n) > cpu*1000*1.1 {
				t.Errorf("%d samples for %.2f s of CPU, part of it in the delay", n, cpu)
			}
			// The front-end takes the paused range.
			checkFrontEndTracks(t, r.out)
			raw := readRaw(t, r.out)
			if prs, _ := raw["pausedRanges"].([]any); len(prs) != 1 {
				t.Errorf("the Gecko file's pausedRanges: %v", raw["pausedRanges"])
			}
		})
	}
}

// fifos makes a control and an ack FIFO.
func fifos(t *testing.T) (ctl, ack string) {
	t.Helper()
	dir := t.TempDir()
	ctl, ack = filepath.Join(dir, "ctl"), filepath.Join(dir, "ack")
	for _, f := range []string{ctl, ack} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ctl, ack
}

// controller is the harness's end of gprof's --control FIFOs.
type controller struct {
	ctl *os.File
	ack *bufio.Reader
	af  *os.File
}

func openController(t *testing.T, ctl, ack string) *controller {
	t.Helper()
	c, err := os.OpenFile(ctl, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := os.OpenFile(ack, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); a.Close() })
	return &controller{ctl: c, ack: bufio.NewReader(a), af: a}
}

// send writes a command and returns the next line of ack, or "" if none
// comes within wait.
func (c *controller) send(t *testing.T, cmd string, wait time.Duration) string {
	t.Helper()
	if _, err := c.ctl.WriteString(cmd + "\n"); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		line, _ := c.ack.ReadString('\n')
		got <- line
	}()
	select {
	case l := <-got:
		return l
	case <-time.After(wait):
		return ""
	}
}

// toggle turns g's sampling on for on and off for off, n times, each
// command acknowledged.
func (c *controller) toggle(t *testing.T, g *bgGprof, n int, on, off time.Duration) {
	t.Helper()
	for range n {
		for _, word := range []string{"enable", "disable"} {
			if got := c.send(t, word, 10*time.Second); got != "ack\n" {
				t.Fatalf("%s: ack %q: %s", word, got, g.stderr.String())
			}
			if word == "enable" {
				time.Sleep(on)
			} else {
				time.Sleep(off)
			}
		}
	}
}

// Bad input on the control channel: an unknown command gets one line on
// stderr and no ack (as perf: a harness must not take it for a success),
// and the recording goes on; a missing FIFO or a file that is not one is
// one line and exit 2 before anything starts; a FIFO nobody writes leaves
// sampling as -D left it, and says so when that was off all along.
func TestControlBadInput(t *testing.T) {
	spin := startSpin(t)
	pid := strconv.Itoa(spin.Process.Pid)
	ctl, ack := fifos(t)
	out := filepath.Join(t.TempDir(), "p.json.gz")
	g := startGprof(t, nil, "record", "-o", out, "--control", "fifo:"+ctl+","+ack, "-p", pid)
	c := openController(t, ctl, ack)
	if a := c.send(t, "ping", 30*time.Second); a != "ack\n" {
		t.Fatalf("ping: %q", a)
	}
	// The unknown command's ack would come before ping's.
	c.ctl.WriteString("frobnicate\n")
	if a := c.send(t, "ping", 30*time.Second); a != "ack\n" {
		t.Fatalf("ping after an unknown command: %q", a)
	}
	if a := c.send(t, "disable", 30*time.Second); a != "ack\n" {
		t.Fatalf("disable: %q", a)
	}
	time.Sleep(200 * time.Millisecond)
	if a := c.send(t, "enable", 30*time.Second); a != "ack\n" {
		t.Fatalf("enable: %q", a)
	}
	time.Sleep(200 * time.Millisecond)
	if a := c.send(t, "stop", 30*time.Second); a != "ack\n" {
		t.Fatalf("stop: %q", a)
	}
	if !g.exited(30 * time.Second) {
		t.Fatal("gprof did not stop on the control's stop")
	}
	if code := g.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d: %s", code, g.stderr.String())
	}
	lines := regexp.MustCompile(`(?m)^gprof: --control: unknown command "frobnicate".*$`).FindAllString(g.stderr.String(), -1)
	if len(lines) != 1 {
		t.Errorf("want one line about the unknown command: %s", g.stderr.String())
	}
	p, err := gecko.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if pr := p.Meta.PausedRanges; len(pr) != 1 || pr[0].End-pr[0].Start < 150e6 {
		t.Errorf("paused ranges %+v: want one of about 200 ms", pr)
	}
	assertUnharmed(t, spin.Process.Pid)

	// A missing FIFO, a regular file, a bad spec, -D -1 alone: exit 2.
	reg := filepath.Join(t.TempDir(), "regular")
	os.WriteFile(reg, nil, 0o644)
	for _, tc := range []struct {
		args    []string
		mention string
	}{
		{[]string{"--control", "fifo:/nonexistent/ctl"}, "mkfifo"},
		{[]string{"--control", "fifo:" + reg}, "not a FIFO"},
		{[]string{"--control", "pipe:x"}, "fifo:CTL[,ACK]"},
		{[]string{"--control", "fd:99"}, "not open"},
		{[]string{"-D", "-1"}, "--control"},
		{[]string{"-D", "soon"}, "milliseconds"},
	} {
		r := gprof(t, append(append([]string{"record", "-o", out}, tc.args...), "--", "true")...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, tc.mention) {
			t.Errorf("record %v: exit %d, want 2 and one line mentioning %q: %q", tc.args, r.code, tc.mention, r.stderr)
		}
	}

	// A FIFO nobody writes, with sampling off from the start: the
	// command runs to its end, the profile is written with one paused
	// range, and a line says sampling never came on.
	ctl2, _ := fifos(t)
	bin := buildC(t, "split")
	r := mustRecord(t, "--control", "fifo:"+ctl2, "-D", "-1", "--", bin, "1", "0.3")
	if !strings.Contains(r.stderr, `sampling was never turned on: nothing wrote "enable" to --control fifo:`+ctl2) {
		t.Errorf("no line saying sampling never came on: %s", r.stderr)
	}
	if pr := r.profile.Meta.PausedRanges; len(pr) != 1 || pr[0].End >= 0 {
		t.Errorf("paused ranges %+v: want one from the start to the end (null)", pr)
	}
	if n := samplesByTid(r.profile); len(n) > 0 {
		for tid, c := range n {
			if c > 0 {
				t.Errorf("thread %d has %d samples with sampling off throughout", tid, c)
			}
		}
	}
	// Without -D, a FIFO nobody writes changes nothing: all is sampled.
	r = mustRecord(t, "--control", "fifo:"+ctl2, "--", bin, "1", "0.3")
	if len(r.profile.Meta.PausedRanges) != 0 || len(samplesByTid(r.profile)) == 0 {
		t.Errorf("a FIFO nobody writes: paused %+v, samples %v", r.profile.Meta.PausedRanges, samplesByTid(r.profile))
	}
}

// --control fd:CTL,ACK: descriptors gprof inherited, as a shell's
// 'exec {fd}<>fifo' passes them.
func TestControlFD(t *testing.T) {
	ctl, ack := fifos(t)
	// Opened read-write, as the shell does, so that neither open waits.
	cf, err := os.OpenFile(ctl, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	af, err := os.OpenFile(ack, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	defer af.Close()
	bin := buildC(t, "split")
	out := filepath.Join(t.TempDir(), "p.json.gz")
	cmd := exec.Command(gprofBin, "record", "-o", out, "-D", "-1", "--control", "fd:3,4", "--", bin, "1", "30")
	cmd.ExtraFiles = []*os.File{cf, af}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	rd := bufio.NewReader(af)
	for _, word := range []string{"enable", "stop"} {
		cf.WriteString(word + "\n")
		line, err := rd.ReadString('\n')
		if err != nil || line != "ack\n" {
			t.Fatalf("%s: ack %q %v", word, line, err)
		}
		if word == "enable" {
			time.Sleep(300 * time.Millisecond)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("gprof: %v: %s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("gprof did not stop")
	}
	p, err := gecko.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if pr := p.Meta.PausedRanges; len(pr) != 1 || pr[0].Start != 0 || pr[0].End <= 0 {
		t.Errorf("paused ranges %+v: want one from the start to the enable", pr)
	}
	if len(samplesByTid(p)) == 0 {
		t.Error("no samples after enable")
	}
}

// Without -D and --control, record is as it was: one event per CPU for a
// launched command (no side-band events), no paused ranges.
func TestRecordWithoutControlUnchanged(t *testing.T) {
	bin := buildC(t, "split")
	files := func(args ...string) int {
		sum := filepath.Join(t.TempDir(), "sum.json")
		mustRecord(t, append([]string{"--backend", "perf", "--json-output", sum}, args...)...)
		var s struct {
			EventFiles int `json:"event_files"`
		}
		data, _ := os.ReadFile(sum)
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("summary: %v", err)
		}
		return s.EventFiles
	}
	ctl, _ := fifos(t)
	plain, controlled := files("--", bin, "1", "0.2"), files("--control", "fifo:"+ctl, "--", bin, "1", "0.2")
	cpus := runtime.NumCPU()
	if plain != cpus || controlled != 2*cpus {
		t.Errorf("event files: %d without --control, %d with; want %d (one per CPU) and %d (with a side-band event each)",
			plain, controlled, cpus, 2*cpus)
	}
	r := mustRecord(t, "--", bin, "1", "0.2")
	raw := readRaw(t, r.out)
	if prs, _ := raw["pausedRanges"].([]any); len(prs) != 0 || len(r.profile.Meta.PausedRanges) != 0 {
		t.Errorf("a plain recording has paused ranges: %v", raw["pausedRanges"])
	}
	var sum map[string]any
	s := gprof(t, "record", "-q", "--json", "-o", filepath.Join(t.TempDir(), "q.json.gz"), "--", bin, "1", "0.1")
	if i := strings.Index(s.stdout, "{"); i >= 0 {
		json.Unmarshal([]byte(s.stdout[i:]), &sum)
	}
	for _, k := range []string{"paused_ranges", "windows"} {
		if _, ok := sum[k]; ok {
			t.Errorf("a plain recording's summary has %q", k)
		}
	}
}

// The control's snapshot: with --switch-output, the window so far is
// written before the ack comes; without, the profile so far is written
// to --output, and recording goes on to the complete one.
func TestControlSnapshot(t *testing.T) {
	spin := startSpin(t)
	pid := strconv.Itoa(spin.Process.Pid)
	t.Run("windows", func(t *testing.T) {
		ctl, ack := fifos(t)
		dir := t.TempDir()
		out, sumPath := filepath.Join(dir, "p.json.gz"), filepath.Join(dir, "sum.json")
		g := startGprof(t, nil, "record", "--switch-output", "-o", out, "--json-output", sumPath, "--control", "fifo:"+ctl+","+ack, "-p", pid)
		c := openController(t, ctl, ack)
		time.Sleep(1200 * time.Millisecond)
		if a := c.send(t, "snapshot", 60*time.Second); a != "ack\n" {
			t.Fatalf("snapshot: %q", a)
		}
		if files := windowFiles(t, dir); len(files) != 1 {
			t.Fatalf("%d window files once snapshot was acked, want 1: %v", len(files), files)
		}
		time.Sleep(1200 * time.Millisecond)
		if a := c.send(t, "stop", 60*time.Second); a != "ack\n" {
			t.Fatalf("stop: %q", a)
		}
		if !g.exited(60*time.Second) || g.cmd.ProcessState.ExitCode() != 0 {
			skipIfNoBackend(t, g.stderr.String())
			t.Fatalf("gprof did not end well after stop: %s", g.stderr.String())
		}
		sum := readWindowsSummary(t, sumPath)
		files := windowFiles(t, dir)
		if len(files) != 2 || len(sum.Windows) != 2 {
			t.Fatalf("%d window files, %d in the summary, want 2 (the snapshot, then the end)", len(files), len(sum.Windows))
		}
		checkWindows(t, files, sum)
	})
	t.Run("no windows", func(t *testing.T) {
		ctl, ack := fifos(t)
		out := filepath.Join(t.TempDir(), "p.json.gz")
		g := startGprof(t, nil, "record", "-o", out, "--control", "fifo:"+ctl+","+ack, "-p", pid)
		c := openController(t, ctl, ack)
		time.Sleep(1200 * time.Millisecond)
		if a := c.send(t, "snapshot", 60*time.Second); a != "ack\n" {
			t.Fatalf("snapshot: %q", a)
		}
		snap, err := gecko.ReadFile(out)
		if err != nil {
			t.Fatalf("the profile so far, once snapshot was acked: %v", err)
		}
		checkFrontEndTracks(t, out)
		time.Sleep(1200 * time.Millisecond)
		if a := c.send(t, "stop", 60*time.Second); a != "ack\n" {
			t.Fatalf("stop: %q", a)
		}
		if !g.exited(60*time.Second) || g.cmd.ProcessState.ExitCode() != 0 {
			skipIfNoBackend(t, g.stderr.String())
			t.Fatalf("gprof did not end well after stop: %s", g.stderr.String())
		}
		final, err := gecko.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		count := func(p *profile.Profile) int {
			n := 0
			for _, c := range samplesByTid(p) {
				n += c
			}
			return n
		}
		ns, nf := count(snap), count(final)
		t.Logf("snapshot: %d samples over %.2f s; final: %d over %.2f s", ns, float64(snap.Meta.Duration)/1e9, nf, float64(final.Meta.Duration)/1e9)
		if ns == 0 || nf <= ns || final.Meta.Duration <= snap.Meta.Duration {
			t.Errorf("the snapshot (%d samples) is not a part of the final profile (%d samples)", ns, nf)
		}
	})
	assertUnharmed(t, spin.Process.Pid)
}

// A launched command whose sampling is turned on and off many times (-D -1
// and --control, 40 phases of 15 ms) is still paced: each CPU's pacer
// wakes at its event's firings and varies their spacing, so that the rate
// is the one asked on average and no spacing repeats. The reader once
// polled the side-band events, which write into the paced rings, and took
// every wake-up: the pacers never woke (one wake-up a recording), and
// each run sampled at a fixed spacing of its own, 0.66 to 1.98 samples per
// ms of the command's CPU time.
func TestControlPacesLaunchedCommand(t *testing.T) {
	bin := buildC(t, "brief")
	ctl, ack := fifos(t)
	out := filepath.Join(t.TempDir(), "p.json.gz")
	g := startGprof(t, nil, "record", "-o", out, "-D", "-1", "--control", "fifo:"+ctl+","+ack, "--", bin, "1500", "1")
	openController(t, ctl, ack).toggle(t, g, 40, 15*time.Millisecond, 5*time.Millisecond)
	if !g.exited(60 * time.Second) {
		t.Fatal("gprof did not end with the command")
	}
	stderr := g.stderr.String()
	if code := g.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("gprof: exit %d: %s", code, stderr)
	}
	skipIfNoPerf(t, result{stderr: stderr})
	if i := strings.Index(stderr, "sampling at a fixed interval"); i >= 0 {
		t.Skipf("the perf backend cannot vary its interval on this machine: %s", strings.SplitN(stderr[i:], "\n", 2)[0])
	}
	p, err := gecko.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	wins := onWindows(p)
	if len(wins) != 40 {
		t.Fatalf("%d stretches with sampling on, want 40: %+v", len(wins), p.Meta.PausedRanges)
	}
	// The busy thread's samples, and the gaps between two in one stretch.
	var times []int64
	for _, pr := range p.Processes {
		for _, th := range pr.Threads {
			if th.Samples.Len() > len(times) {
				times = slices.Clone(th.Samples.Time)
			}
		}
	}
	slices.Sort(times)
	var gaps []float64
	for i := 1; i < len(times); i++ {
		in := func(w [2]int64) bool { return times[i-1] >= w[0] && times[i] <= w[1] }
		if slices.ContainsFunc(wins, in) {
			gaps = append(gaps, float64(times[i]-times[i-1]))
		}
	}
	if len(gaps) < 100 {
		t.Fatalf("%d gaps between samples in the stretches with sampling on, want hundreds (%d samples)", len(gaps), len(times))
	}
	var sum, sq float64
	for _, g := range gaps {
		sum += g
	}
	mean := sum / float64(len(gaps))
	for _, g := range gaps {
		sq += (g - mean) * (g - mean)
	}
	cv := math.Sqrt(sq/float64(len(gaps))) / mean
	// The pacers' spacings (0.4 to 1.6 intervals, four firings each)
	// vary by about 0.3 of their mean; a fixed period's by 0.01, or 0.15
	// where the thread moved between two CPUs' fixed periods.
	margin(t, "the spacing's coefficient of variation", cv, 0.2)
	if cv < 0.2 {
		t.Errorf("samples %.3f ms apart on average, varying by %.3f of that: the pacers did not vary the spacing", mean/1e6, cv)
	}
	var pacers, wakes int
	if _, err := fmt.Sscanf(p.Meta.Extra["perf_pacers"], "%d (%d wake-ups", &pacers, &wakes); err != nil {
		t.Fatalf("no pacer statistics in the profile (%q): %v", p.Meta.Extra["perf_pacers"], err)
	}
	// A pacer wakes at every pacerEvery-th firing (four).
	if want := len(gaps) / 8; wakes < want {
		t.Errorf("the pacers woke %d times for %d samples, want at least %d", wakes, len(times), want)
	}
}

// An attached recording whose sampling is turned on and off many times
// (-D -1 and --control; 200 stretches of 3 ms on, 5 off) keeps its rate
// while on: a busy thread's samples with sampling on, at 1 kHz, within
// the sampling error of a perfect random sampler (4 standard errors) of
// a sample per ms of the CPU time its own clock says it had then
// (testdata/cpulog.c). Each CPU's pacer once went on setting its event's
// period while the event was disabled, which restarts it from nothing
// when enabled, and the part of a period run before each disable was
// lost: about a sample for each stretch with sampling on (10 ms
// stretches got 0.91 of the rate).
func TestControlKeepsAttachedRate(t *testing.T) {
	bin := buildC(t, "cpulog")
	target := exec.Command(bin)
	stdout, err := target.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Process.Kill(); target.Wait() })
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("cpulog said %q", lines.Text())
	}
	pid := target.Process.Pid
	ctl, ack := fifos(t)
	out := filepath.Join(t.TempDir(), "p.json.gz")
	g := startGprof(t, nil, "record", "-o", out, "-D", "-1", "--control", "fifo:"+ctl+","+ack, "-p", strconv.Itoa(pid))
	const stretches = 200
	openController(t, ctl, ack).toggle(t, g, stretches, 3*time.Millisecond, 5*time.Millisecond)
	g.cmd.Process.Signal(os.Interrupt)
	if !g.exited(60 * time.Second) {
		t.Fatal("gprof did not end on SIGINT")
	}
	assertUnharmed(t, pid)
	stderr := g.stderr.String()
	if code := g.cmd.ProcessState.ExitCode(); code != 0 {
		skipIfNoBackend(t, stderr)
		t.Fatalf("gprof: exit %d: %s", code, stderr)
	}
	skipIfNoPerf(t, result{stderr: stderr})
	if i := strings.Index(stderr, "sampling at a fixed interval"); i >= 0 {
		t.Skipf("the perf backend cannot vary its interval on this machine: %s", strings.SplitN(stderr[i:], "\n", 2)[0])
	}
	// The thread's readings of its CPU clock against the wall clock.
	target.Process.Signal(syscall.SIGUSR1)
	var wall, cpu []int64
	for lines.Scan() {
		var w, c int64
		if _, err := fmt.Sscan(lines.Text(), &w, &c); err != nil {
			t.Fatalf("cpulog: %q: %v", lines.Text(), err)
		}
		wall, cpu = append(wall, w), append(cpu, c)
	}
	readings := burnLog{wall: wall, cpu: cpu}
	cpuAt := func(w int64) int64 {
		if len(wall) < 2 || w < wall[0] || w >= wall[len(wall)-1] {
			t.Fatalf("cpulog's readings (%d) do not cover the recording", len(wall))
		}
		return readings.cpuAt(w)
	}
	p, err := gecko.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	wins := onWindows(p)
	if len(wins) > 0 && wins[len(wins)-1][1] <= wins[len(wins)-1][0] {
		wins = wins[:len(wins)-1] // stopped while off
	}
	if len(wins) != stretches {
		t.Fatalf("%d stretches with sampling on, want %d: %+v", len(wins), stretches, p.Meta.PausedRanges)
	}
	zero := p.Meta.StartTime.UnixNano()
	var ms, n float64
	for _, w := range wins {
		ms += float64(cpuAt(zero+w[1])-cpuAt(zero+w[0])) / 1e6
		for _, pr := range p.Processes {
			if pr.Pid != pid {
				continue
			}
			for _, th := range pr.Threads {
				for _, at := range th.Samples.Time {
					if at >= w[0] && at < w[1] {
						n++
					}
				}
			}
		}
	}
	z := (n - ms) / math.Sqrt(ms)
	t.Logf("%.0f samples for %.1f ms of the thread's CPU time with sampling on (%.3f a ms), %.1f standard errors; pacers %s", n, ms, n/ms, z, p.Meta.Extra["perf_pacers"])
	margin(t, "samples against the thread's CPU time with sampling on, in standard errors", z, -4)
	if math.Abs(z) > 4 {
		t.Errorf("%.0f samples for %.1f ms of the thread's CPU time with sampling on at 1 kHz: %.1f standard errors off", n, ms, z)
	}
}
