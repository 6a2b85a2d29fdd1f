//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLockstep records testdata/lockstep, whose 5:3:2 round takes one
// interval of its own CPU time (1 ms at the default 1 kHz), the case where
// a fixed sampling period samples the same instants of every round (issue
// 26: 51-53% for a function that takes 50%, and 8.9 points between two
// identical recordings). With each backend, every run's shares must be the
// program's own (its threads' CPU clocks around each call) within that
// run's sampling error, as a perfect random sampler's would, and the runs
// pooled within a point (or, where fewer samples came, within the pooled
// sampling error). Two of the recordings must pass gprof diff with no
// function beyond the noise. (ptrace: see rmsMax.) The ptrace backend once
// had its samples land further past their due points the sooner those came
// after the last sample, at instants of the round that were the same every
// run (attach/ptrace's handOverMoved): pooled, beta 32.4% for its 30.0% and
// gamma_ 17.7% for 20.0%, the runs' errors 1.6-1.9 rms. The perf backend is
// also attached to the running program (-p), which it samples with paced
// per-CPU events (attach/perf/filter.go); perf's per-thread events gave
// beta 95% of the samples for its 30% there.
func TestLockstep(t *testing.T) {
	bin := buildC(t, "lockstep")
	for _, mode := range []string{"perf", "ptrace", "perf-attached"} {
		backend, attached := strings.CutSuffix(mode, "-attached")
		t.Run(mode, func(t *testing.T) {
			const runs = 10
			// How far a run may be off, in its own sampling errors. A
			// perfect sampler's runs vary by 1 rms; here the runs of
			// every mode varied 0.8-1.3, quiet and beside two CPU-bound
			// loops, and the perf backend's once 1.7. The ptrace
			// backend's stops cost the thread tens of µs of its own CPU
			// time each, and lockstep answers them (it keeps its rounds
			// on a grid of that time, so the rounds after a stop are
			// shortened): its runs' errors must also stay under 2 rms,
			// as a guard on that.
			perRun, rmsMax := 4.0, math.Inf(1)
			if backend == "ptrace" {
				rmsMax = 2
			}
			var zz []float64
			names := []string{"alpha", "beta", "gamma_"}
			var pooledTruth, pooledGot [3]float64
			var pooledN float64
			var outs []string
			for r := range runs {
				var rec recording
				if attached {
					rec = recordAttached(t, backend, bin, "1", "1")
				} else {
					rec = mustRecord(t, "--backend", backend, "--", bin, "1", "1")
				}
				if i := strings.Index(rec.stderr, "sampling at a fixed interval"); i >= 0 {
					// No per-CPU events or no cgroup v2 to keep them to
					// the command (not root, a read-only cgroupfs):
					// gprof said why in one line.
					t.Skipf("the perf backend cannot vary its interval on this machine: %s", strings.SplitN(rec.stderr[i:], "\n", 2)[0])
				}
				truth := lockstepTruth(t, rec.stdout)
				rep := runReport(t, rec.out)
				var n [3]float64
				for i, name := range names {
					if f, ok := findFunc(rep.All.TopSelf, name); ok {
						n[i] = f.SelfPct * float64(rep.Samples) / 100
					}
				}
				total := n[0] + n[1] + n[2]
				if total < 200 {
					t.Fatalf("run %d: %.0f samples in the three functions, want at least 200: %s", r, total, rec.stderr)
				}
				for i, name := range names {
					p := truth[i] / 100
					got := n[i] / total
					se := math.Sqrt(p * (1 - p) / total)
					bound := perRun * se
					zz = append(zz, (got-p)/se)
					margin(t, fmt.Sprintf("run %d %s share off its CPU clock's (%.2f%%, %.0f samples)", r, name, truth[i], total), math.Abs(got-p), bound)
					if math.Abs(got-p) > bound {
						t.Errorf("run %d: %s %.2f%% of %.0f samples, its CPU clock says %.2f%%: beyond %.1f sigma (%.2f points)", r, name, 100*got, total, truth[i], perRun, 100*bound)
					}
					pooledTruth[i] += p * total
					pooledGot[i] += n[i]
				}
				pooledN += total
				outs = append(outs, rec.out)
			}
			var ss float64
			for _, z := range zz {
				ss += z * z
			}
			rms := math.Sqrt(ss / float64(len(zz)))
			margin(t, "rms of the runs' errors, in sampling errors", rms, rmsMax)
			if rms > rmsMax {
				t.Errorf("the runs' shares vary by %.2f sampling errors (rms), want at most %.1f", rms, rmsMax)
			}
			for i, name := range names {
				p := pooledTruth[i] / pooledN
				got := pooledGot[i] / pooledN
				bound := math.Max(0.01, 4*math.Sqrt(p*(1-p)/pooledN))
				margin(t, fmt.Sprintf("pooled %s share off its CPU clock's (%d runs, %.0f samples)", name, runs, pooledN), math.Abs(got-p), bound)
				if math.Abs(got-p) > bound {
					t.Errorf("pooled over %d runs: %s %.2f%%, its CPU clock says %.2f%%: more than %.2f points off", runs, name, 100*got, 100*p, 100*bound)
				}
			}
			d := gprof(t, "diff", "--fail-if", "self:*>+0pp", outs[0], outs[1])
			if d.code != 0 {
				t.Errorf("gprof diff of two identical recordings: exit %d, want 0 (no function beyond the noise):\n%s%s", d.code, d.stdout, d.stderr)
			}
		})
	}
}

// lockstepTruth reads the shares lockstep prints at exit, measured by its
// threads' own CPU clocks.
func lockstepTruth(t *testing.T, stdout string) [3]float64 {
	t.Helper()
	m := regexp.MustCompile(`truth alpha ([0-9.]+) beta ([0-9.]+) gamma_ ([0-9.]+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("lockstep printed no truth line: %q", stdout)
	}
	var v [3]float64
	for i := range v {
		v[i], _ = strconv.ParseFloat(m[i+1], 64)
	}
	return v
}

// recordAttached starts bin with args, attaches gprof record to it at
// once with backend until it exits, and returns the recording with the
// program's standard output in place of gprof's (the program's truth
// covers its whole run; its shares do not change over it).
func recordAttached(t *testing.T, backend, bin string, args ...string) recording {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	rec := mustRecord(t, "--backend", backend, "-p", strconv.Itoa(cmd.Process.Pid))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	rec.stdout = stdout.String()
	return rec
}
