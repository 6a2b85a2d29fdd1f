//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/format/gecko"
)

// ---- 14: a short program ----
//
// testdata/brief.c burns 64 ms of one thread's CPU time and prints that
// thread's id, its CPU time from the start of its work, and the wall time
// that took. Each recorder launches it at 1 kHz, the runs interleaved: how
// many samples the thread got, how far apart they came in its CPU time
// (where the recorder says: gprof's ptrace backend reads the thread's
// clock at each sample, perf's frequency mode counts it in each sample's
// period) and in wall time, and how long the program took.

var briefLine = regexp.MustCompile(`thread (\d+) cpu_ns (\d+) clock \d+ \d+ wall_ns (\d+)`)

func (e *env) shortSuite() (string, error) {
	bin := filepath.Join(e.tmp, "brief")
	if _, err := execute("", "gcc", "-O2", "-g", "-pthread", "-o", bin, filepath.Join(e.root, "testdata", "brief.c")); err != nil {
		return "", err
	}
	const ms = 64
	// A run's figures for the busy thread.
	type run struct {
		samples         int
		cpu, wall       float64 // ms: the thread's CPU time, the program's wall time
		cpuGap, wallGap float64 // ms, the longest; cpuGap < 0 where not known
	}
	type recorder struct {
		name string
		run  func(out string) (run, error)
	}
	parse := func(p proc) (tid int, r run, err error) {
		m := briefLine.FindSubmatch(p.out)
		if m == nil {
			return 0, r, fmt.Errorf("brief printed no thread line: %q", p.out)
		}
		tid, _ = strconv.Atoi(string(m[1]))
		cpu, _ := strconv.ParseFloat(string(m[2]), 64)
		wall, _ := strconv.ParseFloat(string(m[3]), 64)
		return tid, run{cpu: cpu / 1e6, wall: wall / 1e6}, nil
	}
	gprof := func(backend string, logged bool) func(string) (run, error) {
		logged = logged || backend == "perf"
		return func(out string) (run, error) {
			args := []string{"record", "-q", "-r", "1000", "--backend", backend, "-o", out, "--", bin, strconv.Itoa(ms)}
			if logged {
				// The perf backend's samples carry the period set,
				// not the time elapsed: the program logs its clocks
				// instead.
				args = append(args, "1", "log")
			}
			realToMono := realMinusMono()
			p, err := execute("", e.gprof, args...)
			if err != nil {
				return run{}, err
			}
			tid, r, err := parse(p)
			if err != nil {
				return r, err
			}
			prof, err := gecko.ReadFile(out)
			if err != nil {
				return r, err
			}
			r.cpuGap = -1
			var at []int64 // the samples' times, monotonic ns
			for _, pr := range prof.Processes {
				for _, th := range pr.Threads {
					if th.Tid != tid {
						continue
					}
					s := th.Samples
					r.samples = s.Len()
					for i := 0; i < s.Len(); i++ {
						at = append(at, prof.Meta.StartTime.UnixNano()+s.Time[i]-realToMono)
						if i == 0 {
							continue
						}
						r.wallGap = max(r.wallGap, float64(s.Time[i]-s.Time[i-1])/1e6)
						if backend == "ptrace" {
							// Its samples carry the thread's own clock.
							r.cpuGap = max(r.cpuGap, float64(s.CPUDelta[i])/1e6)
						}
					}
				}
			}
			if logged {
				// What it prints after its burn (the log) is
				// sampled too: its count is the burn's.
				gap, n := burnGap(p.out, at)
				r.cpuGap, r.samples = gap/1e6, n
			}
			return r, nil
		}
	}
	// Linux perf, logged or not: logged, its sample times are on the
	// log's clock (-k) and its gaps are read from the log, as gprof's.
	perf := func(logged bool) func(string) (run, error) {
		return func(out string) (run, error) {
			data := out + ".data"
			args := []string{"record", "-q", "-F", "1000", "-g", "-o", data}
			if logged {
				args = append(args, "-k", "CLOCK_MONOTONIC")
			}
			args = append(args, "--", bin, strconv.Itoa(ms))
			if logged {
				args = append(args, "1", "log")
			}
			p, err := execute("", "perf", args...)
			if err != nil {
				return run{}, err
			}
			tid, r, err := parse(p)
			if err != nil {
				return r, err
			}
			script := out + ".txt"
			if _, err := execute(script, "perf", "script", "--ns", "-F", "tid,time,period", "-i", data); err != nil {
				return r, err
			}
			text, err := os.ReadFile(script)
			if err != nil {
				return r, err
			}
			// "TID SECONDS.NANOSECONDS: PERIOD": in frequency mode a
			// cpu-clock sample's period is the thread's CPU time since
			// its last one.
			var at []int64
			for _, line := range strings.Split(string(text), "\n") {
				fs := strings.Fields(line)
				if len(fs) != 3 {
					continue
				}
				if t, _ := strconv.Atoi(fs[0]); t != tid {
					continue
				}
				secs, frac, _ := strings.Cut(strings.TrimSuffix(fs[1], ":"), ".")
				whole, _ := strconv.ParseInt(secs, 10, 64)
				ns, _ := strconv.ParseInt(frac, 10, 64)
				t := whole*1e9 + ns
				period, _ := strconv.ParseFloat(fs[2], 64)
				if len(at) > 0 {
					r.wallGap = max(r.wallGap, float64(t-at[len(at)-1])/1e6)
					r.cpuGap = max(r.cpuGap, period/1e6)
				}
				at = append(at, t)
			}
			r.samples = len(at)
			if logged {
				gap, n := burnGap(p.out, at)
				r.cpuGap, r.samples = gap/1e6, n
			}
			return r, nil
		}
	}
	recorders := []recorder{
		{"gprof, perf backend", gprof("perf", false)},
		{"gprof, ptrace backend", gprof("ptrace", false)},
		{"perf record -F 1000 -g", perf(false)},
	}
	runs := 10
	if e.quick {
		runs = 4
	}
	res := make([][]run, len(recorders))
	var alone []float64 // the program's wall time with no recorder, ms
	for r := 0; r < runs; r++ {
		p, err := execute("", bin, strconv.Itoa(ms))
		if err != nil {
			return "", err
		}
		_, a, err := parse(p)
		if err != nil {
			return "", err
		}
		alone = append(alone, a.wall)
		for _, i := range rotate([]int{0, 1, 2}, r) {
			rec := recorders[i]
			got, err := rec.run(filepath.Join(e.tmp, fmt.Sprintf("brief-%d-%d.json", i, r)))
			if err != nil {
				return "", fmt.Errorf("%s: %w", rec.name, err)
			}
			res[i] = append(res[i], got)
			e.logf("short: %s run %d: %d samples for %.1f ms, longest gap %.2f ms of CPU, %.2f ms of wall; %.1f ms wall", rec.name, r, got.samples, got.cpu, got.cpuGap, got.wallGap, got.wall)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## 14. A short program\n\n")
	fmt.Fprintf(&b, "`testdata/brief.c`: one thread burns %d ms of its CPU time (reading its clock every 20 µs or so) and exits at once; alone it takes %.1f ms of wall time (median). Each recorder launches it at 1 kHz, %d interleaved runs each. *Samples*: the busy thread's, median (min–max); a perfect sampler would take one per ms of its CPU time, %d; perf's count and the ptrace backend's also cover the dynamic loader's 2 ms or so before it, the perf backend's only the burn (see below). *Longest gap*: per run, between two of the thread's samples, median (max) over the runs, in its own CPU time (gprof's ptrace backend reads the thread's clock at each sample; perf's frequency mode counts it in each sample's period; for gprof's perf backend, which records the period set, not the time elapsed, the program logs its CPU clock against the monotonic clock every 5 µs or so, and the gap is read from that over its burn, the stretches before the first sample and after the last included) and in wall time. *Wall*: the program's, median, what the recorder cost it.\n\n", ms, median(alone), runs, ms)
	fmt.Fprintf(&b, "| recorder | samples | runs with ≥ 0.95 of %d | longest gap, CPU time (ms) | longest gap, wall time (ms) | the program's wall (ms) |\n|---|---:|---:|---:|---:|---:|\n", ms)
	for i, rec := range recorders {
		var n, cpuGap, wallGap, wall []float64
		ok := 0
		for _, r := range res[i] {
			n = append(n, float64(r.samples))
			if float64(r.samples) >= 0.95*r.cpu {
				ok++
			}
			if r.cpuGap >= 0 {
				cpuGap = append(cpuGap, r.cpuGap)
			}
			wallGap = append(wallGap, r.wallGap)
			wall = append(wall, r.wall)
		}
		lo, hi := minMax(n)
		gap := "—"
		if len(cpuGap) > 0 {
			_, worst := minMax(cpuGap)
			gap = fmt.Sprintf("%.2f (%.2f)", median(cpuGap), worst)
		}
		_, worstWall := minMax(wallGap)
		fmt.Fprintf(&b, "| %s | %.0f (%.0f–%.0f) | %d of %d | %s | %.2f (%.2f) | %.1f |\n", rec.name, median(n), lo, hi, ok, len(res[i]), gap, median(wallGap), worstWall, median(wall))
	}
	b.WriteString("\n")

	// Beside two CPU-bound loops, which share the program's CPUs (each
	// CPU has one and a half busy threads for it): every recorder's gaps
	// read from the program's own log, the same ruler for all. A gap
	// over two intervals is rare there, so the runs are many.
	loaded := []recorder{
		{"gprof, perf backend", gprof("perf", true)},
		{"gprof, ptrace backend", gprof("ptrace", true)},
		{"perf record -F 1000 -g", perf(true)},
	}
	loadedRuns := 60
	if e.quick {
		loadedRuns = 4
	}
	stop, err := loops(2)
	if err != nil {
		return "", err
	}
	lres := make([][]run, len(loaded))
	for r := 0; r < loadedRuns; r++ {
		for _, i := range rotate([]int{0, 1, 2}, r) {
			rec := loaded[i]
			got, err := rec.run(filepath.Join(e.tmp, fmt.Sprintf("brief-loaded-%d-%d.json", i, r)))
			if err != nil {
				stop()
				return "", fmt.Errorf("%s beside two loops: %w", rec.name, err)
			}
			lres[i] = append(lres[i], got)
			e.logf("short: %s beside two loops, run %d: %d samples for %.1f ms, longest gap %.2f ms of CPU", rec.name, r, got.samples, got.cpu, got.cpuGap)
		}
	}
	stop()
	fmt.Fprintf(&b, "Beside two CPU-bound shell loops (so that each of the two CPUs has one and a half busy threads), %d interleaved runs each, the program logging its clocks for every recorder: each gap is read from that log over its burn (for Linux perf, recording with `-k CLOCK_MONOTONIC` so that its sample times and the log share a clock). A jump of the program's CPU clock of over 0.5 ms between two readings some 5 µs of work apart is the host's (steal time on a VM) and is taken out. *Samples*: over the burn, per ms of the thread's CPU time.\n\n", loadedRuns)
	b.WriteString("| recorder | samples per ms of CPU, median (min–max) | runs with a gap over 2 intervals | longest gap of a run, CPU time (ms), median (max) |\n|---|---:|---:|---:|\n")
	for i, rec := range loaded {
		var per, gaps []float64
		over := 0
		for _, r := range lres[i] {
			per = append(per, float64(r.samples)/r.cpu)
			gaps = append(gaps, r.cpuGap)
			if r.cpuGap > 2 {
				over++
			}
		}
		lo, hi := minMax(per)
		_, worst := minMax(gaps)
		fmt.Fprintf(&b, "| %s | %.3f (%.3f–%.3f) | %d of %d | %.2f (%.2f) |\n", rec.name, median(per), lo, hi, over, len(lres[i]), median(gaps), worst)
	}
	b.WriteString("\n")
	return b.String(), nil
}

// realMinusMono is CLOCK_REALTIME less CLOCK_MONOTONIC now, in ns: a
// profile's sample times are wall times, brief's log monotonic.
func realMinusMono() int64 {
	var mono unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	return time.Now().UnixNano() - unix.TimespecToNsec(mono)
}

// burnGap returns the longest stretch of the busy thread's own CPU time,
// in ns, between two of its samples at (monotonic ns) over its burn, the
// stretches before the first and after the last included, from the log
// brief prints with "log" ("at TID MONOTONIC_NS CPU_NS"), and how many
// samples fell in the burn; -1 without a log.
func burnGap(out []byte, at []int64) (float64, int) {
	var wall, cpu []int64
	for _, line := range strings.Split(string(out), "\n") {
		var tid int
		var w, c int64
		if n, _ := fmt.Sscanf(line, "at %d %d %d", &tid, &w, &c); n == 3 {
			wall, cpu = append(wall, w), append(cpu, c)
		}
	}
	if len(wall) < 2 {
		return -1, len(at)
	}
	// A jump of the clock past stolenStep between two readings some 5 µs
	// of work apart is the host's, not the thread's: a VM's steal time
	// (see e2e's burnLog.unsteal).
	const stolenStep = 500_000
	var stolen int64
	for i, prev := 1, cpu[0]; i < len(cpu); i++ {
		d := cpu[i] - prev
		prev = cpu[i]
		if d > stolenStep {
			stolen += d - stolenStep
		}
		cpu[i] -= stolen
	}
	// The thread ran from a reading on, for as long as it took to the
	// next.
	cpuAt := func(t int64) int64 {
		i := max(0, sort.Search(len(wall), func(i int) bool { return wall[i] > t })-1)
		if i+1 >= len(wall) {
			return cpu[len(cpu)-1]
		}
		return cpu[i] + min(max(0, t-wall[i]), cpu[i+1]-cpu[i])
	}
	slices.Sort(at)
	last, worst, n := cpu[0], int64(0), 0
	for _, t := range at {
		if t < wall[0] || t > wall[len(wall)-1] {
			continue
		}
		c := cpuAt(t)
		worst = max(worst, c-last)
		last, n = c, n+1
	}
	return float64(max(worst, cpu[len(cpu)-1]-last)), n
}
