//go:build linux

package main

import (
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ---- 13: a program in step with the sampling interval ----
//
// testdata/lockstep.c: one thread calls alpha, beta and gamma_ with 5:3:2
// units of work in a loop whose round takes 1 ms of its own CPU time (the
// default interval), and measures the three functions' CPU time with its
// own clock around every call: the truth. Each recorder samples it at
// 1 kHz, the runs interleaved; the shares of its samples are set against
// the truth run by run and pooled. gprof's perf backend and perf also
// attach (-p) to a lockstep started just before.

var lockstepTruthLine = regexp.MustCompile(`truth alpha ([0-9.]+) beta ([0-9.]+) gamma_ ([0-9.]+)`)

func (e *env) lockstepSuite() (string, error) {
	bin := filepath.Join(e.tmp, "lockstep")
	if _, err := execute("", "gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", bin, filepath.Join(e.root, "testdata", "lockstep.c")); err != nil {
		return "", err
	}
	funcs := []string{"alpha", "beta", "gamma_"}
	type recorder struct {
		name string
		run  func(out string) (proc, map[string]int64, error)
	}
	// gprofSelf and perfSelf read a recording's self samples by function,
	// all threads together.
	gprofSelf := func(out string) (map[string]int64, error) {
		m, err := gprofReport(e.gprof, out)
		return selfTotals(m), err
	}
	perfSelf := func(out, data string) (map[string]int64, error) {
		script := out + ".txt"
		if _, err := execute(script, "perf", "script", "--show-lost-events", "-i", data); err != nil {
			return nil, err
		}
		m, _, err := perfScript(script)
		return selfTotals(m), err
	}
	// round is lockstep's round in µs of its CPU time; the main table's
	// is the default, 1000.
	round := "1000"
	launched := func(record ...string) func(string) (proc, error) {
		return func(string) (proc, error) {
			return execute("", record[0], append(slices.Clone(record[1:]), "--", bin, "1", "1", round)...)
		}
	}
	// attached runs lockstep and attaches record (its words before the
	// pid) to it until it exits; the proc returned holds lockstep's
	// output and wall time (what the recorder cost it).
	attached := func(record ...string) func(string) (proc, error) {
		return func(string) (proc, error) {
			cmd := exec.Command(bin, "1", "1")
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			start := time.Now()
			if err := cmd.Start(); err != nil {
				return proc{}, err
			}
			// lockstep's own end, not the recorder's (which writes its
			// profile after).
			var werr error
			ended := make(chan time.Time, 1)
			go func() {
				werr = cmd.Wait()
				ended <- time.Now()
			}()
			args := append(slices.Clone(record[1:]), strconv.Itoa(cmd.Process.Pid))
			_, err := execute("", record[0], args...)
			end := <-ended
			p := proc{wall: end.Sub(start).Seconds(), out: stdout.Bytes()}
			if err == nil {
				err = werr
			}
			return p, err
		}
	}
	gprof := func(start func(...string) func(string) (proc, error), args ...string) func(string) (proc, map[string]int64, error) {
		return func(out string) (proc, map[string]int64, error) {
			p, err := start(append([]string{e.gprof, "record", "-q", "-r", "1000", "-o", out}, args...)...)(out)
			if err != nil {
				return p, nil, err
			}
			self, err := gprofSelf(out)
			return p, self, err
		}
	}
	perf := func(start func(...string) func(string) (proc, error), args ...string) func(string) (proc, map[string]int64, error) {
		return func(out string) (proc, map[string]int64, error) {
			data := out + ".data"
			p, err := start(append([]string{"perf", "record", "-q", "-g", "-o", data}, args...)...)(out)
			if err != nil {
				return p, nil, err
			}
			self, err := perfSelf(out, data)
			return p, self, err
		}
	}
	recorders := []recorder{
		{"gprof, perf backend", gprof(launched, "--backend", "perf")},
		{"gprof, perf backend, attached (-p)", gprof(attached, "--backend", "perf", "-p")},
		{"gprof, ptrace backend", gprof(launched, "--backend", "ptrace")},
		{"perf record -c 1000000 (cpu-clock, 1 kHz)", perf(launched, "-e", "cpu-clock", "-c", "1000000")},
		{"perf record -F 1000 -p (attached)", perf(attached, "-F", "1000", "-p")},
	}
	runs := 10
	if e.quick {
		runs = 4
	}
	type result struct {
		dev      [][3]float64 // per run, share - truth, points
		share    [][3]float64
		got, all [3]float64 // pooled samples in each function, and in the three
		truthSum [3]float64 // truth shares summed over runs, weighted by samples
		n        float64
		wall     []float64 // attached: lockstep's wall time, s
		z        []float64 // per run, the three functions' errors in sampling errors, rms
	}
	// measure runs rec once and adds the run to r.
	measure := func(rec recorder, r *result, out string) error {
		p, self, err := rec.run(out)
		if err != nil {
			return err
		}
		m := lockstepTruthLine.FindStringSubmatch(string(p.out))
		if m == nil {
			return fmt.Errorf("lockstep printed no truth line: %q", p.out)
		}
		var truth, share, dev [3]float64
		var n float64
		for k := range funcs {
			truth[k], _ = strconv.ParseFloat(m[k+1], 64)
			n += float64(self[funcs[k]])
		}
		if n == 0 {
			return fmt.Errorf("%s: no samples in %v", rec.name, funcs)
		}
		var z2 float64
		for k, f := range funcs {
			share[k] = 100 * float64(self[f]) / n
			dev[k] = share[k] - truth[k]
			r.got[k] += float64(self[f])
			r.truthSum[k] += truth[k] * n
			q := truth[k] / 100
			z2 += dev[k] * dev[k] / (100 * 100 * q * (1 - q) / n)
		}
		r.n += n
		r.z = append(r.z, math.Sqrt(z2/3))
		r.wall = append(r.wall, p.wall)
		r.dev = append(r.dev, dev)
		r.share = append(r.share, share)
		e.logf("lockstep (round %s µs): %s: %.1f/%.1f/%.1f against %.1f/%.1f/%.1f, %.0f samples", round, rec.name, share[0], share[1], share[2], truth[0], truth[1], truth[2], n)
		return nil
	}
	res := make([]result, len(recorders))
	var alone []float64 // lockstep's wall time with no recorder
	for r := 0; r < runs; r++ {
		p, err := execute("", bin, "1", "1")
		if err != nil {
			return "", err
		}
		alone = append(alone, p.wall)
		for _, i := range rotate([]int{0, 1, 2, 3, 4}, r) {
			if err := measure(recorders[i], &res[i], filepath.Join(e.tmp, fmt.Sprintf("lockstep-%d-%d.json", i, r))); err != nil {
				return "", err
			}
		}
	}
	// Rounds near the interval and at its multiples and halves, launched.
	var sweep []int // the recorders that launch lockstep
	for i, rec := range recorders {
		if !strings.Contains(rec.name, "attached") {
			sweep = append(sweep, i)
		}
	}
	rounds := []string{"500", "900", "1100", "2000"}
	swept := make([][]result, len(rounds))
	for j, ru := range rounds {
		round = ru
		swept[j] = make([]result, len(recorders))
		for r := 0; r < runs; r++ {
			for _, i := range rotate(sweep, r) {
				if err := measure(recorders[i], &swept[j][i], filepath.Join(e.tmp, fmt.Sprintf("lockstep-%s-%d-%d.json", ru, i, r))); err != nil {
					return "", err
				}
			}
		}
	}
	// pooledDev is each function's pooled share less its truth, points.
	pooledDev := func(r result) (p [3]float64) {
		for k := range funcs {
			p[k] = 100*r.got[k]/r.n - r.truthSum[k]/r.n
		}
		return p
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## 13. A program in step with the interval\n\n")
	fmt.Fprintf(&b, "`testdata/lockstep.c` with one thread: alpha, beta and gamma_ take 5:3:2 of each round, a round takes 1 ms of the thread's CPU time (the default interval), and the thread measures each function's CPU time with its own clock around every call (the truth: 50/30/20 within a few hundredths). 1 s of its CPU a run, %d interleaved runs per recorder at 1 kHz. gprof's perf backend varies its interval (a launched command in a cgroup of its own, per-CPU events whose period a pacer redraws every fourth sample; attached, per-CPU events of every task whose period a pacer redraws every fourth firing, a BPF program keeping the target's samples alone); Linux perf and a per-thread event fire at a fixed period. Attached runs start lockstep and attach at once, until it exits; *lockstep's wall* is its median wall time then (1 s of its CPU plus what the recorder took from it, from its start, which the recorder attaches to a few ms to a few tens of ms later; alone, median %.3f s). *Pooled*: each function's share of all the runs' samples against the truth, points, with 4 standard errors of a perfect random sampler beside it; *per run*: |share − truth| of alpha, points, and the spread of alpha's share across runs.\n\n", runs, median(alone))
	fmt.Fprintf(&b, "| recorder | pooled alpha | pooled beta | pooled gamma_ | 4 SE | alpha per run: median (max) | alpha spread across runs | lockstep's wall (attached) |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, rec := range recorders {
		r := res[i]
		pooled := pooledDev(r)
		var absA, shareA []float64
		for j := range r.dev {
			absA = append(absA, math.Abs(r.dev[j][0]))
			shareA = append(shareA, r.share[j][0])
		}
		lo, hi := minMax(shareA)
		_, maxA := minMax(absA)
		se := 4 * 100 * math.Sqrt(0.5*0.5/r.n)
		wall := "—"
		if strings.Contains(rec.name, "attached") {
			wall = fmt.Sprintf("%.3f s", median(r.wall))
		}
		fmt.Fprintf(&b, "| %s | %+.2f | %+.2f | %+.2f | %.2f | %.2f (%.2f) | %.1f–%.1f | %s |\n", rec.name, pooled[0], pooled[1], pooled[2], se, median(absA), maxA, lo, hi, wall)
	}
	fmt.Fprintf(&b, "\nThe same program with rounds of other lengths, launched, %d interleaved runs per recorder and round: halves and multiples of the interval, where a fixed period meets the same instants of each round or of every other one, and rounds a tenth off it, whose instants a fixed period walks through. *Runs' errors*: each run's three shares against its truth in that run's sampling errors, rms over the functions, then over the runs (a perfect random sampler: about 1).\n\n", runs)
	b.WriteString("| round | recorder | pooled alpha | pooled beta | pooled gamma_ | 4 SE | runs' errors, rms (max) |\n|---:|---|---:|---:|---:|---:|---:|\n")
	for j, ru := range rounds {
		for _, i := range sweep {
			r := swept[j][i]
			p := pooledDev(r)
			var z2 float64
			for _, z := range r.z {
				z2 += z * z
			}
			_, maxZ := minMax(r.z)
			fmt.Fprintf(&b, "| %s µs | %s | %+.2f | %+.2f | %+.2f | %.2f | %.2f (%.2f) |\n", ru, recorders[i].name, p[0], p[1], p[2], 4*100*math.Sqrt(0.5*0.5/r.n), math.Sqrt(z2/float64(len(r.z))), maxZ)
		}
	}
	b.WriteString("\n")
	return b.String(), nil
}

// selfTotals adds up the threads' self samples by function.
func selfTotals(m map[int]*threadProfile) map[string]int64 {
	self := map[string]int64{}
	for _, t := range m {
		for k, v := range t.self {
			self[k] += v
		}
	}
	return self
}
