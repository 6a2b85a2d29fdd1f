//go:build linux

// Command driver runs gprof's benchmarks against perf and writes
// bench/RESULTS.md. Run it with bench/run, which builds gprof first.
//
// Every comparison is interleaved (A B A B ..., the order rotated each
// round) and reported as the median of per-round ratios against the peer
// measured in the same round, since these machines are shared and noisy.
// Profiler cost is CPU time (getrusage of the profiler and its reaped
// children, minus the target's own getrusage), not wall time.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

type env struct {
	root    string // repository root
	tmp     string
	gprof   string
	work    string // bench/fixture/work.c, built
	split   string // testdata/split.c, built
	threads string // testdata/threads.c, built by the scale suite
	log     *os.File

	quick bool
	// suite parameters
	rounds      int
	costThreads int
	costUnits   int
	costDepth   int
	fidSeconds  float64
	fidRounds   int
	postSamples int
	postRounds  int
	longSeconds int
	longRate    int
	longLimit   string
	longDepth   int
	// windows suite
	windowsSeconds int
	windowsEvery   string
	windowsRounds  int
	windowsUnits   int

	loadMu sync.Mutex
	loads  []float64
}

func main() {
	e := &env{}
	flag.BoolVar(&e.quick, "quick", false, "a ~3-minute version: fewer rounds, smaller runs")
	flag.IntVar(&e.rounds, "rounds", 0, "interleaved rounds of the cost runs (default 5; quick 3)")
	flag.IntVar(&e.costUnits, "units", 0, "work units per thread in cost runs (~0.12 ms each; default 20000; quick 10000)")
	flag.IntVar(&e.costThreads, "threads", 2, "busy threads in cost runs")
	flag.IntVar(&e.costDepth, "depth", 16, "maximum call depth in cost runs")
	flag.Float64Var(&e.fidSeconds, "fid-seconds", 0, "CPU seconds per thread in fidelity runs (default 1.5; quick 1)")
	flag.IntVar(&e.fidRounds, "fid-rounds", 0, "interleaved rounds per rate of fidelity runs (default 3; quick 2)")
	flag.IntVar(&e.postSamples, "post-samples", 0, "samples per thread (8 threads) of the synthetic profile (default 600000 = 10 min at 1 kHz; quick 150000)")
	flag.IntVar(&e.postRounds, "post-rounds", 0, "rounds of post-processing (default 3; quick 1)")
	flag.IntVar(&e.longSeconds, "long-seconds", 0, "length of each long recording (default 60; quick 15)")
	flag.IntVar(&e.longRate, "long-rate", 1000, "sampling rate of long recordings")
	flag.StringVar(&e.longLimit, "long-limit", "", "--max-memory of the bounded long recording (default 8M; quick 4M)")
	flag.IntVar(&e.longDepth, "long-depth", 24, "maximum call depth of the long recordings' target (more depth: more distinct stacks)")
	flag.IntVar(&e.windowsSeconds, "windows-seconds", 0, "length of the windows suite's long recording (default 3600: an hour; quick 60)")
	flag.StringVar(&e.windowsEvery, "windows-every", "10s", "--switch-output of the windows suite's long recording")
	flag.IntVar(&e.windowsRounds, "windows-rounds", 0, "interleaved rounds of the windows suite's comparison with perf (default 3; quick 1)")
	flag.IntVar(&e.windowsUnits, "windows-units", 0, "work units per thread of the windows suite's comparison with perf (~0.12 ms each; default 100000; quick 30000)")
	only := flag.String("only", "", "comma-separated suites to run: cost,fidelity,post,long,samplers,scale,python,lockstep,short,attach,windows (default all but windows, which records for an hour)")
	out := flag.String("o", "bench/RESULTS.md", "results `FILE`")
	flag.Parse()
	def := func(v *int, full, quick int) {
		if *v == 0 {
			*v = full
			if e.quick {
				*v = quick
			}
		}
	}
	def(&e.rounds, 5, 3)
	def(&e.costUnits, 20000, 10000)
	def(&e.fidRounds, 3, 2)
	def(&e.postSamples, 600_000, 150_000)
	def(&e.postRounds, 3, 1)
	def(&e.longSeconds, 60, 15)
	def(&e.windowsSeconds, 3600, 60)
	def(&e.windowsRounds, 3, 1)
	def(&e.windowsUnits, 100000, 30000)
	if e.fidSeconds == 0 {
		e.fidSeconds = 1.5
		if e.quick {
			e.fidSeconds = 1
		}
	}
	if e.longLimit == "" {
		e.longLimit = "8M"
		if e.quick {
			e.longLimit = "4M"
		}
	}
	if err := e.main(*only, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (e *env) main(only, out string) error {
	var err error
	if e.root, err = os.Getwd(); err != nil {
		return err
	}
	e.gprof = filepath.Join(e.root, "bin", "gprof")
	if _, err := os.Stat(e.gprof); err != nil {
		return fmt.Errorf("%v (bench/run builds it)", err)
	}
	if _, err := exec.LookPath("perf"); err != nil {
		return fmt.Errorf("perf not found: install linux-perf")
	}
	if e.tmp, err = os.MkdirTemp("", "gprof-bench-"); err != nil {
		return err
	}
	defer os.RemoveAll(e.tmp)
	e.work = filepath.Join(e.tmp, "work")
	e.split = filepath.Join(e.tmp, "split")
	for src, bin := range map[string]string{"bench/fixture/work.c": e.work, "testdata/split.c": e.split} {
		if _, err := execute("", "gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", bin, src); err != nil {
			return err
		}
	}
	want := func(s string) bool {
		if only == "" {
			// The windows suite records for an hour: only when named.
			return s != "windows"
		}
		return strings.Contains(","+only+",", ","+s+",")
	}

	start := time.Now()
	stop := make(chan struct{})
	go e.sampleLoad(stop)
	machine := e.machine()
	var sections []string
	type suite struct {
		name string
		run  func() (string, error)
	}
	for _, s := range []suite{
		{"cost", e.costSuite},
		{"fidelity", e.fidelitySuite},
		{"post", e.postSuite},
		{"long", e.longSuite},
		{"samplers", e.samplersSuite},
		{"scale", e.scaleSuite},
		{"python", e.pythonSuite},
		{"lockstep", e.lockstepSuite},
		{"short", e.shortSuite},
		{"attach", e.attachSuite},
		{"windows", e.windowsSuite},
	} {
		if !want(s.name) {
			continue
		}
		t := time.Now()
		e.logf("suite %s", s.name)
		md, err := s.run()
		if err != nil {
			return fmt.Errorf("%s: %v", s.name, err)
		}
		sections = append(sections, md)
		e.logf("suite %s done in %s", s.name, time.Since(t).Round(time.Second))
	}
	close(stop)

	var b strings.Builder
	fmt.Fprintf(&b, "# gprof benchmarks\n\n")
	fmt.Fprintf(&b, "Reproduce with one command from the repository root: `bench/run` "+
		"(about 30 minutes; `bench/run --quick` takes about 3; `bench/run --help` lists the parameters). "+
		"It builds gprof and the fixtures, runs every measurement against `perf` on the same machine, and rewrites this file. ")
	fmt.Fprintf(&b, "This run: `bench/run %s`, %s, took %s.\n\n", strings.Join(os.Args[1:], " "),
		start.UTC().Format("2006-01-02 15:04 UTC"), time.Since(start).Round(time.Second))
	b.WriteString(machine)
	e.loadMu.Lock()
	loads := slices.Clone(e.loads)
	e.loadMu.Unlock()
	lo, hi := minMax(loads)
	fmt.Fprintf(&b, "- load average (1 min) during the run, sampled every 5 s: median %.2f, min %.2f, max %.2f "+
		"(the machine is shared; hence interleaved runs and ratios against a peer measured in the same round)\n",
		median(loads), lo, hi)
	fmt.Fprintf(&b, "- `kernel.perf_event_max_sample_rate` at the end: %s\n\n", readTrim("/proc/sys/kernel/perf_event_max_sample_rate"))
	b.WriteString("Method: every comparison interleaves its variants round by round (A B C A B C ..., the order rotated each round), " +
		"and reports medians and the median of per-round ratios against the peer from the same round. " +
		"CPU times are getrusage of the profiler process and its reaped children (what wait4 returns, as `/usr/bin/time` reports it) " +
		"minus the target's own getrusage, which the fixture prints just before it exits. " +
		"Both tools sample the software `cpu-clock` event with a fixed period (perf `-c`, gprof `-r`); " +
		fmt.Sprintf("in DWARF mode both copy %d bytes of stack per sample (gprof's default; perf's default is 8192). ", perfStack) +
		"Fixtures are built with `gcc -O2 -g -fno-omit-frame-pointer`.\n\n")
	old, _ := os.ReadFile(out)
	for _, s := range mergeSections(string(old), sections) {
		b.WriteString(s)
		b.WriteString("\n")
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	e.logf("wrote %s", out)
	return nil
}

func (e *env) machine() string {
	var b strings.Builder
	uname, _ := exec.Command("uname", "-srm").Output()
	ncpu, _ := exec.Command("nproc").Output()
	model := ""
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	perfV, _ := exec.Command("perf", "--version").Output()
	goV, _ := exec.Command("go", "version").Output()
	rev, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	fmt.Fprintf(&b, "Machine and software:\n\n")
	fmt.Fprintf(&b, "- %s CPUs (`nproc`), %s; kernel %s\n", strings.TrimSpace(string(ncpu)), model, strings.TrimSpace(string(uname)))
	fmt.Fprintf(&b, "- %s; %s; gprof at commit %s (plus uncommitted changes, if any, in the work tree)\n",
		strings.TrimSpace(string(perfV)), strings.TrimSpace(string(goV)), strings.TrimSpace(string(rev)))
	fmt.Fprintf(&b, "- `kernel.perf_event_paranoid` %s, `perf_event_mlock_kb` %s, `perf_event_max_sample_rate` at the start %s\n",
		readTrim("/proc/sys/kernel/perf_event_paranoid"), readTrim("/proc/sys/kernel/perf_event_mlock_kb"),
		readTrim("/proc/sys/kernel/perf_event_max_sample_rate"))
	return b.String()
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

func (e *env) sampleLoad(stop chan struct{}) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		var l float64
		if _, err := fmt.Sscan(readTrim("/proc/loadavg"), &l); err == nil {
			e.loadMu.Lock()
			e.loads = append(e.loads, l)
			e.loadMu.Unlock()
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// mergeSections keeps the sections of the old results file that this run
// did not produce (those written by other harnesses, such as bench/offcpu.sh
// and bench/ptrace-load, and the hand-written analysis), in their place,
// and puts each section this run produced where its old version stood, or
// at the end when it is new. Sections start at "## " lines.
func mergeSections(old string, produced []string) []string {
	heading := func(s string) string {
		line, _, _ := strings.Cut(strings.TrimLeft(s, "\n"), "\n")
		return line
	}
	fresh := map[string]string{}
	for _, s := range produced {
		fresh[heading(s)] = s
	}
	var out []string
	used := map[string]bool{}
	parts := strings.Split(old, "\n## ")
	for _, p := range parts[1:] {
		sec := "## " + strings.TrimRight(p, "\n") + "\n"
		h := heading(sec)
		if f, ok := fresh[h]; ok {
			out = append(out, f)
			used[h] = true
			continue
		}
		out = append(out, sec)
	}
	for _, s := range produced {
		if !used[heading(s)] {
			out = append(out, s)
		}
	}
	return out
}
