//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// rotate returns ts rotated left by r, so each round starts with a
// different variant.
func rotate[T any](ts []T, r int) []T {
	r %= len(ts)
	return append(slices.Clone(ts[r:]), ts[:r]...)
}

// ---- 1 and 2: profiler cost and target slowdown ----

func (e *env) costSuite() (string, error) {
	const rate = 1000
	tools := []tool{none, gprofFP, perfFP, gprofDwarf, perfDwarf, gprofPtrace}
	target := []string{e.work, strconv.Itoa(e.costThreads), strconv.Itoa(e.costUnits), strconv.Itoa(e.costDepth)}
	tiny := []string{e.work, "1", "1", "1"}
	res := map[string][]outcome{}
	fixed := map[string][]float64{}
	for r := 0; r < e.rounds; r++ {
		for _, t := range rotate(tools, r) {
			o, err := e.profile(t, rate, target, false)
			if err != nil {
				return "", err
			}
			res[t.name] = append(res[t.name], o)
			e.logf("cost round %d %-12s target %.3fs profiler %.3fs samples %d lost %d", r+1, t.name, o.target.rusage, o.profCPU, o.samples, o.lost)
		}
		// Fixed cost: a target that ends at once still costs a whole
		// start, symbolication of what it mapped, and write.
		for _, t := range rotate(tools[1:], r) {
			o, err := e.profile(t, rate, tiny, false)
			if err != nil {
				return "", err
			}
			fixed[t.name] = append(fixed[t.name], o.profCPU)
		}
	}
	per1k := func(o outcome) float64 { return 1e6 * o.profCPU / math.Max(float64(o.samples), 1) } // ms
	col := func(name string, f func(outcome) float64) []float64 {
		var xs []float64
		for _, o := range res[name] {
			xs = append(xs, f(o))
		}
		return xs
	}
	ratios := func(a, b string, f func(outcome) float64) []float64 {
		var xs []float64
		for i := range res[a] {
			if y := f(res[b][i]); y > 0 {
				xs = append(xs, f(res[a][i])/y)
			}
		}
		return xs
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## 1. Profiler cost\n\n")
	fmt.Fprintf(&b, "CPU time the profiler spends to reach a finished, symbolicated profile of `work %s %s %s` "+
		"(bench/fixture/work.c: %s threads, %s units of work each, call stacks 2 to %d frames deep through recursive functions), "+
		"sampled at %d Hz. gprof: `gprof record` (it symbolicates before it exits). perf: `perf record` plus "+
		"`perf script` to a file (what a perf user runs to see the same stacks with names). "+
		"%d interleaved rounds; medians. *Ratio* is the median over rounds of gprof's CPU per 1000 samples divided by its peer's in the same round "+
		"(below 1: gprof is cheaper). *Fixed* is the profiler CPU for a target that exits at once (`work 1 1 1`): start-up, symbolication and write, independent of samples.\n\n",
		target[1], target[2], target[3], target[1], target[2], e.costDepth+1, rate, e.rounds)
	b.WriteString("| profiler | samples | lost | profiler CPU s | of which perf script s | CPU ms / 1000 samples | ratio vs peer | fixed CPU ms | peak RSS MB |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, t := range tools[1:] {
		ratio := "—"
		if t.peer != "" {
			ratio = fmt.Sprintf("%.2f× %s", median(ratios(t.name, t.peer, per1k)), t.peer)
		}
		script := "—"
		if t.perfArgs != nil {
			script = fmt.Sprintf("%.3f", median(col(t.name, func(o outcome) float64 { return o.profCPU - o.recCPU })))
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.3f | %s | %.1f | %s | %.0f | %.0f |\n", t.name,
			median(col(t.name, func(o outcome) float64 { return float64(o.samples) })),
			median(col(t.name, func(o outcome) float64 { return float64(o.lost) })),
			median(col(t.name, func(o outcome) float64 { return o.profCPU })), script,
			median(col(t.name, per1k)), ratio, 1000*median(fixed[t.name]),
			median(col(t.name, func(o outcome) float64 { return float64(o.maxRSS) / 1024 })))
	}
	b.WriteString("\ngprof ptrace is capped at 1 kHz per thread and has no perf equivalent; it is compared with perf dwarf (both give full stacks without frame pointers). " +
		"Peak RSS is the larger of the recorder and, for perf, `perf script`.\n\n")

	fmt.Fprintf(&b, "## 2. Target slowdown\n\n")
	fmt.Fprintf(&b, "The target's own CPU time (its getrusage at exit) for the same fixed work as above, unprofiled and under each profiler at %d Hz. "+
		"*Slowdown* is the median over rounds of target CPU divided by the unprofiled run's in the same round. %d interleaved rounds.\n\n", rate, e.rounds)
	b.WriteString("| target run | target CPU s (median) | min–max | slowdown vs unprofiled | vs peer |\n|---|---:|---:|---:|---:|\n")
	tcpu := func(o outcome) float64 { return o.target.rusage }
	for _, t := range tools {
		lo, hi := minMax(col(t.name, tcpu))
		slow, peer := "1 (reference)", "—"
		if t.name != none.name {
			slow = fmt.Sprintf("%.3f×", median(ratios(t.name, none.name, tcpu)))
		}
		if t.peer != "" {
			peer = fmt.Sprintf("%.3f× %s", median(ratios(t.name, t.peer, tcpu)), t.peer)
		}
		fmt.Fprintf(&b, "| %s | %.3f | %.3f–%.3f | %s | %s |\n", t.name, median(col(t.name, tcpu)), lo, hi, slow, peer)
	}
	return b.String(), nil
}

// ---- 3 and 4: sample fidelity and attribution ----

type fidRow struct {
	deliv      []float64 // delivered / expected, per busy thread and run
	lost       []float64
	funcShare  [3][]float64 // work_a, work_b, work_c % of their sum
	funcErr    []float64    // max |share - 50/30/20| pp per run
	threadErr  []float64    // max |sample share - CPU share| pp per run
	otherShare []float64    // % of busy threads' samples outside work_a/b/c
}

func (e *env) fidelitySuite() (string, error) {
	rates := []int{1000, 4000, 10000}
	toolsAt := func(rate int) []tool {
		ts := []tool{gprofDwarf, perfDwarf, gprofFP, perfFP}
		if rate <= 1000 { // the ptrace backend's cap
			ts = append(ts, gprofPtrace)
		}
		return ts
	}
	target := []string{e.split, "2", strconv.FormatFloat(e.fidSeconds, 'f', -1, 64)}
	funcs := [3]string{"work_a", "work_b", "work_c"}
	want := [3]float64{50, 30, 20}
	rows := map[string]*fidRow{}
	for _, rate := range rates {
		for r := 0; r < e.fidRounds; r++ {
			for _, t := range rotate(toolsAt(rate), r) {
				o, err := e.profile(t, rate, target, true)
				if err != nil {
					return "", err
				}
				key := fmt.Sprintf("%d|%s", rate, t.name)
				row := rows[key]
				if row == nil {
					row = &fidRow{}
					rows[key] = row
				}
				row.lost = append(row.lost, float64(o.lost))
				var fs [3]float64
				var busySamples, busyCPU, other float64
				for tid, cpu := range o.target.threadCPU {
					busyCPU += cpu
					if tp := o.threads[tid]; tp != nil {
						busySamples += float64(tp.samples)
					}
				}
				var terr float64
				for tid, cpu := range o.target.threadCPU {
					tp := o.threads[tid]
					if tp == nil {
						tp = &threadProfile{}
					}
					row.deliv = append(row.deliv, float64(tp.samples)/(cpu*float64(rate)))
					terr = math.Max(terr, math.Abs(100*float64(tp.samples)/math.Max(busySamples, 1)-100*cpu/busyCPU))
					var in float64
					for i, f := range funcs {
						fs[i] += float64(tp.self[f])
						in += float64(tp.self[f])
					}
					other += float64(tp.samples) - in
				}
				row.threadErr = append(row.threadErr, terr)
				sum := fs[0] + fs[1] + fs[2]
				var ferr float64
				for i := range funcs {
					sh := 100 * fs[i] / math.Max(sum, 1)
					row.funcShare[i] = append(row.funcShare[i], sh)
					ferr = math.Max(ferr, math.Abs(sh-want[i]))
				}
				row.funcErr = append(row.funcErr, ferr)
				row.otherShare = append(row.otherShare, 100*other/math.Max(busySamples, 1))
				e.logf("fidelity %5d Hz %-11s samples %d lost %d delivered/expected %v", rate, t.name, o.samples, o.lost, row.deliv[len(row.deliv)-len(o.target.threadCPU):])
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## 3. Sample fidelity\n\n")
	fmt.Fprintf(&b, "`testdata/split.c` with 2 worker threads, each burning %s s of its own CPU (measured by the thread itself with CLOCK_THREAD_CPUTIME_ID). "+
		"*Delivered / expected* is the samples of a worker thread in the profile divided by its CPU time × rate, over both workers of every run "+
		"(median and minimum; 1.00 is perfect). *Lost*: gprof's `--json` \"lost\"; perf's PERF_RECORD_LOST totals from `perf script --show-lost-events`. "+
		"%d interleaved rounds per rate (gprof dwarf, perf dwarf, gprof fp, perf fp, and at 1 kHz gprof ptrace, rotated). "+
		"gprof ptrace is compared with perf dwarf.\n\n", target[2], e.fidRounds)
	b.WriteString("| rate | profiler | delivered / expected (median) | min | lost per run (median) | max | gprof ÷ perf (delivered) |\n|---:|---|---:|---:|---:|---:|---:|\n")
	for _, rate := range rates {
		for _, t := range toolsAt(rate) {
			row := rows[fmt.Sprintf("%d|%s", rate, t.name)]
			lo, _ := minMax(row.deliv)
			_, lmax := minMax(row.lost)
			cmp := "—"
			if t.peer != "" {
				if p := median(rows[fmt.Sprintf("%d|%s", rate, t.peer)].deliv); p > 0 {
					cmp = fmt.Sprintf("%.3f", median(row.deliv)/p)
				}
			}
			fmt.Fprintf(&b, "| %d Hz | %s | %.3f | %.3f | %.0f | %.0f | %s |\n", rate, t.name, median(row.deliv), lo, median(row.lost), lmax, cmp)
		}
	}
	fmt.Fprintf(&b, "\n## 4. Attribution accuracy\n\n")
	b.WriteString("The same runs. split.c gives work_a, work_b and work_c identical work in a 50/30/20 ratio, and both workers the same CPU time. " +
		"*Function error* is the largest |measured − expected| share among the three functions (percentage points, shares of their sum, both workers); " +
		"*thread error* is the largest |share of samples − share of CPU| among the workers. gprof's from `gprof report --json`; perf's from the leaf frames of `perf script`. Medians over runs (max in brackets).\n\n")
	b.WriteString("| rate | profiler | work_a % | work_b % | work_c % | function error pp | thread error pp | samples elsewhere % |\n|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, rate := range rates {
		for _, t := range toolsAt(rate) {
			row := rows[fmt.Sprintf("%d|%s", rate, t.name)]
			_, fmax := minMax(row.funcErr)
			_, tmax := minMax(row.threadErr)
			fmt.Fprintf(&b, "| %d Hz | %s | %.1f | %.1f | %.1f | %.2f (%.2f) | %.2f (%.2f) | %.2f |\n", rate, t.name,
				median(row.funcShare[0]), median(row.funcShare[1]), median(row.funcShare[2]),
				median(row.funcErr), fmax, median(row.threadErr), tmax, median(row.otherShare))
		}
	}
	return b.String(), nil
}

// ---- 5: post-processing ----

func (e *env) postSuite() (string, error) {
	const threads = 8
	big := filepath.Join(e.tmp, "big.json.gz")
	e.logf("synthesizing %d threads × %d samples", threads, e.postSamples)
	if _, err := execute("", "go", "run", "./bench/synth", "-bin", e.gprof, "-threads", strconv.Itoa(threads),
		"-samples", strconv.Itoa(e.postSamples), "-o", big); err != nil {
		return "", err
	}
	sym := filepath.Join(e.tmp, "big-sym.json.gz")
	if _, err := execute("", e.gprof, "symbolicate", big, "-o", sym); err != nil {
		return "", err
	}
	st, _ := os.Stat(big)
	steps := []struct {
		name string
		cmd  []string
		out  string
	}{
		{"reference: `gzip -dc` of the input", []string{"gzip", "-dc", sym}, os.DevNull},
		{"`gprof symbolicate` (names from the binary on disk)", []string{e.gprof, "symbolicate", big, "-o", filepath.Join(e.tmp, "s2.json.gz")}, ""},
		{"`gprof convert` (to processed format)", []string{e.gprof, "convert", sym, "-o", filepath.Join(e.tmp, "processed.json.gz")}, ""},
		{"`gprof report`", []string{e.gprof, "report", sym}, os.DevNull},
	}
	cpu := make([][]float64, len(steps))
	wall := make([][]float64, len(steps))
	rss := make([][]float64, len(steps))
	ratio := make([][]float64, len(steps))
	idx := []int{0, 1, 2, 3}
	for r := 0; r < e.postRounds; r++ {
		got := make([]float64, len(steps))
		for _, i := range rotate(idx, r) {
			s := steps[i]
			p, err := execute(s.out, s.cmd[0], s.cmd[1:]...)
			if err != nil {
				return "", err
			}
			cpu[i] = append(cpu[i], p.cpu)
			wall[i] = append(wall[i], p.wall)
			rss[i] = append(rss[i], float64(p.maxRSS)/1024)
			got[i] = p.cpu
			e.logf("post round %d %s: cpu %.2fs wall %.2fs rss %d MB", r+1, s.name, p.cpu, p.wall, p.maxRSS/1024)
		}
		for i := range steps {
			ratio[i] = append(ratio[i], got[i]/got[0])
		}
	}
	ms := float64(threads*e.postSamples) / 1e6
	var b strings.Builder
	fmt.Fprintf(&b, "## 5. Post-processing a large profile\n\n")
	fmt.Fprintf(&b, "A synthetic recording the size of %d threads × %d samples (%.1f M samples; %.0f minutes at 1 kHz), %.1f MB gzipped, written by "+
		"`go run ./bench/synth` with the repository's format packages: stacks 8 to 60 frames deep sharing prefixes like a real call tree, "+
		"20,000 distinct leaf stacks per thread drawn with a Zipf skew, frames at real addresses of 4,000 functions of bin/gprof "+
		"(a %.0f MB Go binary with DWARF), so symbolication does real ELF/DWARF/pclntab work. convert and report read the symbolicated profile, "+
		"as `gprof record` leaves it. CPU and peak RSS from wait4 (the same figures as `/usr/bin/time -v`). There is no perf equivalent for these files; "+
		"the peer is `gzip -dc` of the same input in the same round, to show how much of the time is just decompression. %d round(s).\n\n",
		threads, e.postSamples, ms, float64(e.postSamples)/60000, float64(st.Size())/1e6, fileMB(e.gprof), e.postRounds)
	b.WriteString("| step | CPU s (median) | wall s | CPU s per M samples | peak RSS MB | CPU ÷ gzip -dc |\n|---|---:|---:|---:|---:|---:|\n")
	for i, s := range steps {
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.2f | %.0f | %.2f |\n", s.name, median(cpu[i]), median(wall[i]), median(cpu[i])/ms, median(rss[i]), median(ratio[i]))
	}
	// Symbolication of large binaries: the package's own benchmarks.
	e.logf("go test -bench ./symbolize/")
	p, err := execute("", "go", "test", "-run", "^$", "-bench", ".", "-benchtime", "5x", "./symbolize/")
	if err == nil {
		fmt.Fprintf(&b, "\nSymbolication on large binaries, from the package's benchmarks (`go test -run '^$' -bench . -benchtime 5x ./symbolize/`, this run): "+
			"*Index* opens a binary and builds its index (symbol tables, DWARF unit list, pclntab); *FirstLookups* is 1000 lookups on a fresh index; *Lookup* one lookup on a warm index. "+
			"`compile` is the Go toolchain's compiler (%.0f MB); `libc` is libc.so.6 with its separate debug file when libc6-dbg is installed.\n\n```\n", compileMB())
		sc := bufio.NewScanner(bytes.NewReader(p.out))
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Benchmark") {
				b.WriteString(sc.Text() + "\n")
			}
		}
		b.WriteString("```\n")
	} else {
		fmt.Fprintf(&b, "\n(`go test -bench ./symbolize/` failed: %v)\n", err)
	}
	return b.String(), nil
}

func fileMB(path string) float64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return float64(st.Size()) / 1e6
}

func compileMB() float64 {
	out, err := exec.Command("go", "env", "GOTOOLDIR").Output()
	if err != nil {
		return 0
	}
	return fileMB(filepath.Join(strings.TrimSpace(string(out)), "compile"))
}

// ---- 6: long recordings ----

type rssPoint struct {
	t   float64 // s since start
	kib int64
}

func (e *env) longRun(limit string) ([]rssPoint, gprofSummary, float64, error) {
	out := filepath.Join(e.tmp, "long.json.gz")
	args := []string{"record", "-q", "--json", "-r", strconv.Itoa(e.longRate), "-d", strconv.Itoa(e.longSeconds), "-o", out}
	if limit != "" {
		args = append(args, "--max-memory", limit)
	}
	args = append(args, "--", e.work, "2", "0", strconv.Itoa(e.longDepth))
	cmd := exec.Command(e.gprof, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, gprofSummary{}, 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var pts []rssPoint
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	for {
		select {
		case err := <-done:
			if err != nil {
				return pts, gprofSummary{}, 0, fmt.Errorf("gprof %s: %v: %s", strings.Join(args, " "), err, tail(stderr.Bytes()))
			}
			s, err := parseSummary(stdout.Bytes())
			return pts, s, time.Since(start).Seconds(), err
		case <-tick.C:
			if kib, ok := vmRSS(status); ok {
				pts = append(pts, rssPoint{time.Since(start).Seconds(), kib})
			}
		}
	}
}

func vmRSS(status string) (int64, bool) {
	data, err := os.ReadFile(status)
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, err := strconv.ParseInt(f[0], 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

func parseSize(s string) int64 {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n * mult
}

func (e *env) longSuite() (string, error) {
	type longRes struct {
		name  string
		limit string
		pts   []rssPoint
		sum   gprofSummary
		total float64
	}
	var runs []longRes
	for _, limit := range []string{"", e.longLimit} {
		name := "unbounded"
		if limit != "" {
			name = "--max-memory " + limit
		}
		e.logf("long recording %s, %d s", name, e.longSeconds)
		pts, sum, total, err := e.longRun(limit)
		if err != nil {
			return "", err
		}
		runs = append(runs, longRes{name, limit, pts, sum, total})
		e.logf("long %s: samples %d discarded %d, %d RSS points", name, sum.Samples, sum.Discarded, len(pts))
	}
	rssAt := func(pts []rssPoint, t float64) int64 {
		var v int64
		for _, p := range pts {
			if p.t <= t {
				v = p.kib
			}
		}
		return v
	}
	peak := func(pts []rssPoint, from, to float64) int64 {
		var v int64
		for _, p := range pts {
			if p.t >= from && p.t <= to {
				v = max(v, p.kib)
			}
		}
		return v
	}
	const baseAt = 3.0 // s: rings mapped and touched, little profile data yet
	D := float64(e.longSeconds)
	var b strings.Builder
	fmt.Fprintf(&b, "## 6. Long recordings: memory\n\n")
	fmt.Fprintf(&b, "`gprof record -r %d -d %d -- work 2 0 %d` (2 threads busy for the whole recording with call stacks up to %d frames along pseudo-random paths, "+
		"so new distinct stacks keep appearing: a worst case for a profile's stack tables), once unbounded and once with `--max-memory %s`, one after the other. "+
		"gprof's VmRSS is read from /proc/PID/status every 0.5 s. *Baseline* is the RSS at %.0f s (perf rings mapped and filled, little profile data yet). "+
		"*Recording peak* is the largest RSS until the duration ends; *final peak* includes writing and symbolicating the profile.\n\n",
		e.longRate, e.longSeconds, e.longDepth, e.longDepth+1, e.longLimit, baseAt)
	b.WriteString("| mode | samples | discarded | baseline MB | RSS at end of recording MB | recording peak MB | final peak MB | " +
		"growth KB / 1000 samples, baseline to end | growth KB / 1000 samples, last third | recording peak − baseline, ÷ limit |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range runs {
		base := rssAt(r.pts, baseAt)
		end := rssAt(r.pts, D)
		recPeak := peak(r.pts, 0, D)
		finPeak := peak(r.pts, 0, math.Inf(1))
		// Samples accrue at a steady rate, so those in a stretch of the
		// recording are its share of the duration.
		n := float64(r.sum.Samples + r.sum.Discarded)
		growth := float64(end-base) / (n * (D - baseAt) / D / 1000)
		late := float64(end-rssAt(r.pts, 2*D/3)) / (n / 3 / 1000)
		held := "—"
		if r.limit != "" {
			held = fmt.Sprintf("%.2f (%.1f MB ÷ %s)", float64(recPeak-base)/float64(parseSize(r.limit)/1024),
				float64(recPeak-base)/1024, r.limit)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %.1f | %.1f | %.1f | %.0f | %.0f | %s |\n", r.name, r.sum.Samples, r.sum.Discarded,
			float64(base)/1024, float64(end)/1024, float64(recPeak)/1024, float64(finPeak)/1024, growth, late, held)
	}
	b.WriteString("\nRSS over time (MB):\n\n| t s |")
	for _, r := range runs {
		b.WriteString(" " + r.name + " |")
	}
	b.WriteString("\n|---:|")
	for range runs {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	step := math.Max(1, math.Round(D/12))
	var last float64
	for _, r := range runs {
		if n := len(r.pts); n > 0 {
			last = math.Max(last, r.pts[n-1].t)
		}
	}
	for t := step; t <= last+step/2; t += step {
		fmt.Fprintf(&b, "| %.0f |", t)
		for _, r := range runs {
			if v := rssAt(r.pts, t); v > 0 && (len(r.pts) > 0 && t <= r.pts[len(r.pts)-1].t+step) {
				fmt.Fprintf(&b, " %.1f |", float64(v)/1024)
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}
