//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/format/gecko"
)

// The samplers keep up: each busy thread gets a sample per interval of its
// CPU time, on a quiet machine and beside a CPU-bound loop (which the
// tests start themselves, so that both conditions are met on any
// machine), and the JSON summary says how near they came.

// recordSummary is the part of record's JSON summary these tests read.
type recordSummaryJSON struct {
	Samples        int      `json:"samples"`
	Backend        string   `json:"backend"`
	SampleRatio    *float64 `json:"sample_ratio"`
	SampleRatioMin *float64 `json:"sample_ratio_min"`
}

// recordWithSummary records args and returns the profile's path, the JSON
// summary and stderr, with gprof's notices (no -q, which silences them).
func recordWithSummary(t *testing.T, args ...string) (string, recordSummaryJSON, string) {
	t.Helper()
	dir := t.TempDir()
	out, sum := filepath.Join(dir, "p.json.gz"), filepath.Join(dir, "summary.json")
	r := mustRecord(t, append([]string{"-o", out, "--json-output", sum}, args...)...)
	data, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	var s recordSummaryJSON
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("summary %s: %v", data, err)
	}
	return out, s, r.stderr
}

// besideLoop runs a CPU-bound shell loop until the test ends, when load
// says so.
func besideLoop(t *testing.T, load string) {
	t.Helper()
	if load == "quiet" {
		return
	}
	loop := exec.Command("sh", "-c", "while :; do :; done")
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loop.Process.Kill(); loop.Wait() })
}

// checkRatio checks the summary's sample ratios: every busy thread got at
// least 0.9 of the samples its CPU time asks for, and no more than 1.1.
func checkRatio(t *testing.T, what string, s recordSummaryJSON) {
	t.Helper()
	checkRatioMin(t, what, s, 0.9)
}

// checkRatioMin is checkRatio with the lowest thread's bound given.
func checkRatioMin(t *testing.T, what string, s recordSummaryJSON, lowest float64) {
	t.Helper()
	if s.SampleRatio == nil || s.SampleRatioMin == nil {
		t.Errorf("%s: the summary has no sample ratio (no busy thread?): %+v", what, s)
		return
	}
	margin(t, what+" sample_ratio_min", *s.SampleRatioMin, lowest)
	if *s.SampleRatioMin < lowest || *s.SampleRatio > 1.1 {
		t.Errorf("%s: sample ratio %.3f, lowest thread %.3f; want %.2f to 1.1", what, *s.SampleRatio, *s.SampleRatioMin, lowest)
	}
}

// TestSamplersKeepUp: the known 50/30/20 split in two threads, with both
// Linux backends, at 100 Hz and 1 kHz, quiet and beside a loop: the
// samples follow the threads' CPU time, and the shares the truth within
// four sampling errors.
func TestSamplersKeepUp(t *testing.T) {
	bin := buildC(t, "split")
	truth := map[string]float64{"work_a": 50, "work_b": 30, "work_c": 20}
	for _, backend := range []string{"perf", "ptrace"} {
		for _, load := range []string{"quiet", "loop"} {
			for _, rate := range []string{"100", "1000"} {
				t.Run(backend+"/"+load+"/"+rate, func(t *testing.T) {
					besideLoop(t, load)
					// 1.5 s of CPU per thread: 150 samples each at 100 Hz.
					out, s, stderr := recordWithSummary(t, "--backend", backend, "-r", rate, "--", bin, "2", "1.5")
					logBackendStats(t, out, backend+"_")
					checkRatio(t, backend, s)
					if strings.Contains(stderr, "of the samples") {
						t.Errorf("a shortfall notice where there was none: %s", stderr)
					}
					rep := runReport(t, out)
					n := float64(rep.Samples)
					for fn, pct := range truth {
						f, _ := findFunc(rep.All.TopTotal, fn)
						p := pct / 100
						tol := 100 * 4 * math.Sqrt(p*(1-p)/n)
						margin(t, fmt.Sprintf("%s total %% (±%.1f)", fn, tol), f.TotalPct, pct)
						if math.Abs(f.TotalPct-pct) > tol {
							t.Errorf("%s has %.1f%% total time in %.0f samples, want %.0f%% ± %.1f", fn, f.TotalPct, n, pct, tol)
						}
					}
				})
			}
		}
	}
}

// TestPtraceRealPrograms: the ptrace backend keeps up with programs
// nobody here wrote (perl, python3, node, xz) and a C loop, quiet and
// beside a loop.
func TestPtraceRealPrograms(t *testing.T) {
	split := buildC(t, "split")
	data := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(data, pseudoRandom(6<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	progs := []struct {
		name string
		argv []string
	}{
		{"C loop", []string{split, "1", "0.8"}},
		{"perl", []string{"perl", "-e", `my $s = 0; $s += sqrt($_) for 1 .. 1e7; print "$s\n"`}},
		{"python3", []string{"python3", "-c", "s = 0\nfor i in range(5000000): s += i * i\nprint(s)"}},
		{"node", []string{"node", "-e", "let s = 0; for (let i = 0; i < 2e8; i++) s += i % 7; console.log(s)"}},
		{"xz", []string{"xz", "-6", "-T1", "-c", data}},
	}
	// Each run is judged by what gprof promises (it says so below 0.8 of
	// the samples asked for, record's shortfallLimit), and the quiet runs
	// of all programs together by 0.9. Beside a loop on a machine already
	// busy (two more CPU-bound processes on 2 CPUs), a ptrace stop often
	// waits for the thread's CPU, and the lowest thread got 0.865 to
	// 0.886; quiet, every program gets 0.99 to 1.0 here, but xz got 0.792
	// in one CI run (a VM not at hand: the stoppers' figures are logged
	// for the next one), so one program's dip is not a failure unless
	// gprof keeps quiet about it, while a sampler that falls short for
	// all of them is.
	var got, want float64
	for _, p := range progs {
		if _, err := exec.LookPath(p.argv[0]); err != nil {
			t.Logf("%s: not installed (./test.sh installs it)", p.name)
			continue
		}
		for _, load := range []string{"quiet", "loop"} {
			t.Run(p.name+"/"+load, func(t *testing.T) {
				besideLoop(t, load)
				out, s, stderr := recordWithSummary(t, append([]string{"--backend", "ptrace", "--no-symbols", "--"}, p.argv...)...)
				t.Logf("%d samples", s.Samples)
				logBackendStats(t, out, "ptrace_")
				checkRatioMin(t, p.name, s, 0)
				if s.SampleRatioMin == nil {
					return
				}
				margin(t, p.name+" sample_ratio_min (or a notice)", *s.SampleRatioMin, shortfallNotice)
				if *s.SampleRatioMin < shortfallNotice && !strings.Contains(stderr, "of the samples") {
					t.Errorf("%s: sample ratio %.3f and no notice: %s", p.name, *s.SampleRatioMin, stderr)
				}
				if load == "quiet" && *s.SampleRatio > 0 {
					got += float64(s.Samples)
					want += float64(s.Samples) / *s.SampleRatio
				}
			})
		}
	}
	if want > 0 {
		margin(t, "quiet runs' pooled sample ratio", got/want, 0.9)
		if got/want < 0.9 {
			t.Errorf("the quiet runs together got %.3f of the samples their CPU time asks for, want 0.9 or more", got/want)
		}
	}
}

// shortfallNotice is the sample ratio below which record says a backend
// fell short (record's shortfallLimit).
const shortfallNotice = 0.8

// logBackendStats logs the profile's metadata entries named with prefix:
// what the backend says of its ticks, stops and samples, for a failure's
// diagnosis on a machine not at hand.
func logBackendStats(t *testing.T, path, prefix string) {
	t.Helper()
	p, err := gecko.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(p.Meta.Extra))
	for k := range p.Meta.Extra {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Logf("%s: %s", k, p.Meta.Extra[k])
	}
}

// pseudoRandom returns n bytes that do not compress (xz works hard on
// them).
func pseudoRandom(n int) []byte {
	b := make([]byte, n)
	x := uint64(88172645463325252)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> 32)
	}
	return b
}

// TestPtraceHotSpotsMatchPerf: on a real program nobody here wrote (xz,
// stripped, its hot loops in liblzma), the ptrace backend's samples land
// on the same instructions as the perf backend's, in the same shares
// within their sampling errors. Stops that came late from another CPU
// used to land where the thread next entered the kernel, on the
// instructions that fault (33% each at three addresses where perf put 42%
// at one).
//
// Both backends sample the same run of xz, attached with -p before it
// reads its input (-D -1 and --control, so that the harness knows when
// each samples): two runs one after the other are two different
// executions, and xz's shares move by several points between them when
// the machine's other work changes (CI's packages run side by side: one
// run took 3.3 s of CPU, the next 4.8 s, and their shares of one
// function were 16.2 and 10.9%).
func TestPtraceHotSpotsMatchPerf(t *testing.T) {
	xz, err := exec.LookPath("xz")
	if err != nil {
		t.Skip("xz is not installed (./test.sh installs it)")
	}
	target := exec.Command(xz, "-6", "-T1", "-c")
	stdin, err := target.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	pid := fmt.Sprint(target.Process.Pid)
	backends := []string{"perf", "ptrace"}
	outs := map[string]string{}
	var gs []*bgGprof
	for _, backend := range backends {
		ctl, ack := fifos(t)
		outs[backend] = filepath.Join(t.TempDir(), "p.json.gz")
		g := startGprof(t, nil, "record", "-q", "--backend", backend, "--no-symbols", "-D", "-1",
			"--control", "fifo:"+ctl+","+ack, "-o", outs[backend], "-p", pid)
		if got := openController(t, ctl, ack).send(t, "enable", time.Minute); got != "ack\n" {
			g.exited(5 * time.Second)
			skipIfNoBackend(t, g.stderr.String())
			t.Fatalf("%s: enable answered %q\n%s", backend, got, g.stderr.String())
		}
		gs = append(gs, g)
	}
	if _, err := stdin.Write(pseudoRandom(6 << 20)); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if err := target.Wait(); err != nil {
		t.Fatalf("xz: %v", err)
	}
	for i, g := range gs {
		if !g.exited(time.Minute) || g.cmd.ProcessState.ExitCode() != 0 {
			t.Fatalf("%s backend's gprof did not end well after xz: %v\n%s", backends[i], g.cmd.ProcessState, g.stderr.String())
		}
	}
	shares := map[string]map[string]float64{}
	var n = map[string]float64{}
	for _, backend := range backends {
		rep := runReport(t, outs[backend])
		// Shares of user-mode samples: perf also samples interrupts and
		// its own work in the kernel ([kernel]), which ptrace counts at
		// the instruction interrupted.
		var user float64
		for _, f := range rep.All.TopSelf {
			if f.Name != "[kernel]" {
				user += f.SelfPct
			}
		}
		shares[backend] = map[string]float64{}
		for _, f := range rep.All.TopSelf {
			if f.Name != "[kernel]" {
				shares[backend][f.Name] = 100 * f.SelfPct / user
			}
		}
		n[backend] = float64(rep.Samples) * user / 100
		t.Logf("%s: %d samples", backend, rep.Samples)
	}
	var top []string
	for name, pct := range shares["perf"] {
		if pct >= 10 {
			top = append(top, name)
		}
	}
	if len(top) == 0 {
		t.Fatalf("no address with 10%% of perf's samples: %v", shares["perf"])
	}
	for _, name := range top {
		a, b := shares["perf"][name], shares["ptrace"][name]
		// The difference of two independent shares of one run: five
		// standard errors, and a point for what ptrace's stops change
		// in the run they sample.
		p := a / 100
		tol := 100*5*math.Sqrt(p*(1-p)/n["perf"]+p*(1-p)/n["ptrace"]) + 1
		margin(t, fmt.Sprintf("%s ptrace %% vs perf %.1f%% (±%.1f)", name, a, tol), b, a)
		if math.Abs(a-b) > tol {
			t.Errorf("%s: %.1f%% of ptrace's samples, %.1f%% of perf's; want within %.1f", name, b, a, tol)
		}
	}
}
