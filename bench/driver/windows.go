//go:build linux

package main

import (
	"bytes"
	"encoding/json"
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

// ---- 12: windows (record --switch-output) ----
//
// Two measurements. A long one: one recording of e.windowsSeconds (an
// hour by default) at 1 kHz, cut into windows every e.windowsEvery, with
// gprof's RSS and CPU time read every second: memory must stay within one
// window's, however long the recording, and the cost of a window shows as
// CPU above the steady rate in the seconds after each cut. And a short,
// interleaved one against perf record --switch-output, the peer, for the
// cost per window to a symbolicated profile: gprof's windows are written
// with their names; perf's need a perf script each.

// windowsPoint is one second of the long recording.
type windowsPoint struct {
	t   float64 // s since start
	kib int64   // VmRSS
	cpu float64 // s of gprof's own CPU (its threads; not the target's) so far
}

// windowsSummary is the part of record's JSON summary the suite reads.
type windowsSummary struct {
	Samples int64 `json:"samples"`
	Lost    int64 `json:"lost"`
	Windows []struct {
		Output   string  `json:"output"`
		Duration float64 `json:"duration_s"`
		Samples  int64   `json:"samples"`
		Written  bool    `json:"written"`
		Removed  bool    `json:"removed"`
	} `json:"windows"`
}

// procCPU reads a process's own user+system CPU time, in s, from
// /proc/PID/stat (clock ticks of 10 ms).
func procCPU(pid int) (float64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100, true
}

// windowsLong runs the long recording.
func (e *env) windowsLong(dir string) ([]windowsPoint, windowsSummary, error) {
	out := filepath.Join(dir, "p.json.gz")
	args := []string{"record", "-q", "--json", "-r", strconv.Itoa(e.longRate), "-d", strconv.Itoa(e.windowsSeconds),
		"--switch-output=" + e.windowsEvery, "--switch-max-files", "12", "-o", out,
		"--", e.work, "2", "0", strconv.Itoa(e.longDepth)}
	cmd := exec.Command(e.gprof, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, windowsSummary{}, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var pts []windowsPoint
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	lastLog := time.Now()
	for {
		select {
		case err := <-done:
			var s windowsSummary
			if err != nil {
				return pts, s, fmt.Errorf("gprof %s: %v: %s", strings.Join(args, " "), err, tail(stderr.Bytes()))
			}
			i := bytes.Index(stdout.Bytes(), []byte("\n{"))
			err = json.Unmarshal(stdout.Bytes()[i+1:], &s)
			return pts, s, err
		case <-tick.C:
			kib, ok1 := vmRSS(status)
			cpu, ok2 := procCPU(cmd.Process.Pid)
			if ok1 && ok2 {
				pts = append(pts, windowsPoint{time.Since(start).Seconds(), kib, cpu})
			}
			if time.Since(lastLog) > 5*time.Minute && len(pts) > 0 {
				lastLog = time.Now()
				p := pts[len(pts)-1]
				e.logf("windows: %.0f s, RSS %.1f MB, gprof CPU %.1f s", p.t, float64(p.kib)/1024, p.cpu)
			}
		}
	}
}

// windowsRun is one run of the short, interleaved measurement.
type windowsRun struct {
	cpu     float64 // s of the profiler's CPU to symbolicated profiles
	windows int
	samples int64
}

// windowsShort profiles work UNITS under one variant: gprof or perf,
// with or without windows every second.
func (e *env) windowsShort(perf, windows bool, units int) (windowsRun, error) {
	var r windowsRun
	dir, err := os.MkdirTemp(e.tmp, "win-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	target := []string{"--", e.work, "2", strconv.Itoa(units), strconv.Itoa(e.longDepth)}
	if !perf {
		out := filepath.Join(dir, "p.json.gz")
		args := []string{"record", "-q", "--json", "-r", "1000", "-o", out}
		if windows {
			args = append(args, "--switch-output=1s")
		}
		p, err := execute("", e.gprof, append(args, target...)...)
		if err != nil {
			return r, err
		}
		t := parseTarget(p.out)
		r.cpu = p.cpu - t.rusage
		i := bytes.Index(p.out, []byte("\n{"))
		var s windowsSummary
		if err := json.Unmarshal(p.out[i+1:], &s); err != nil {
			return r, err
		}
		r.samples, r.windows = s.Samples, max(len(s.Windows), 1)
		return r, nil
	}
	data := filepath.Join(dir, "perf.data")
	args := []string{"record", "-q", "-e", "cpu-clock", "-c", "1000000", "--call-graph", "dwarf," + strconv.Itoa(perfStack), "-o", data}
	if windows {
		args = append(args, "--switch-output=1s")
	}
	p, err := execute("", "perf", append(args, target...)...)
	if err != nil {
		return r, err
	}
	t := parseTarget(p.out)
	r.cpu = p.cpu - t.rusage
	files, _ := filepath.Glob(data + "*")
	slices.Sort(files)
	for _, f := range files {
		s, err := execute(os.DevNull, "perf", "script", "-i", f)
		if err != nil {
			return r, err
		}
		r.cpu += s.cpu
	}
	r.windows = len(files)
	return r, nil
}

func (e *env) windowsSuite() (string, error) {
	dir, err := os.MkdirTemp(e.tmp, "windows-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	e.logf("windows: one recording of %d s at %d Hz, a window every %s", e.windowsSeconds, e.longRate, e.windowsEvery)
	pts, sum, err := e.windowsLong(dir)
	if err != nil {
		return "", err
	}
	every, _ := time.ParseDuration(e.windowsEvery)

	// The short, interleaved runs.
	type variant struct {
		name          string
		perf, windows bool
	}
	variants := []variant{{"gprof", false, false}, {"gprof, windows of 1 s", false, true}, {"perf", true, false}, {"perf, windows of 1 s", true, true}}
	res := map[string][]windowsRun{}
	units := e.windowsUnits
	for r := 0; r < e.windowsRounds; r++ {
		for _, v := range rotate(variants, r) {
			o, err := e.windowsShort(v.perf, v.windows, units)
			if err != nil {
				return "", err
			}
			res[v.name] = append(res[v.name], o)
			e.logf("windows round %d %-22s CPU %.3f s, %d windows, %d samples", r+1, v.name, o.cpu, o.windows, o.samples)
		}
	}
	perWindow := func(with, without string) []float64 {
		var xs []float64
		for i := range res[with] {
			w, n := res[with][i], res[without][i]
			if w.windows > 1 {
				xs = append(xs, 1000*(w.cpu-n.cpu)/float64(w.windows-1))
			}
		}
		return xs
	}
	gw, pw := perWindow("gprof, windows of 1 s", "gprof"), perWindow("perf, windows of 1 s", "perf")
	var ratios []float64
	for i := range min(len(gw), len(pw)) {
		if pw[i] > 0 {
			ratios = append(ratios, gw[i]/pw[i])
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "## 12. Windows: continuous recording\n\n")
	fmt.Fprintf(&b, "`gprof record -r %d -d %d --switch-output=%s --switch-max-files 12 -- work 2 0 %d` (bench/fixture/work.c, 2 threads busy "+
		"for the whole recording along pseudo-random call paths up to %d frames deep, so that new stacks keep appearing): one recording of %s, "+
		"cut into a window, a complete symbolicated profile of its own, every %s. gprof's own VmRSS and CPU time (its threads only, from /proc/PID/stat, "+
		"10 ms ticks) are read every second.\n\n",
		e.longRate, e.windowsSeconds, e.windowsEvery, e.longDepth, e.longDepth+1, time.Duration(e.windowsSeconds)*time.Second, e.windowsEvery)
	var samples []float64
	kept := 0
	for _, w := range sum.Windows {
		samples = append(samples, float64(w.Samples))
		if w.Written && !w.Removed {
			kept++
		}
	}
	lo, hi := minMax(samples)
	fmt.Fprintf(&b, "| windows | samples | lost | samples a window: median (min–max) | files kept |\n|---:|---:|---:|---|---:|\n")
	fmt.Fprintf(&b, "| %d | %d | %d | %.0f (%.0f–%.0f) | %d |\n\n", len(sum.Windows), sum.Samples, sum.Lost, median(samples), lo, hi, kept)

	// Memory: baseline once the first window closed, then over time.
	at := func(t float64) windowsPoint {
		var p windowsPoint
		for _, q := range pts {
			if q.t <= t {
				p = q
			}
		}
		return p
	}
	D := float64(e.windowsSeconds)
	base := at(every.Seconds() + 5)
	var peak int64
	for _, p := range pts {
		peak = max(peak, p.kib)
	}
	early := maxRSS(pts, every.Seconds()+5, max(D/4, 2*every.Seconds()+5))
	late := maxRSS(pts, D*3/4, D)
	fmt.Fprintf(&b, "Memory: VmRSS %.1f MB after the first window, largest %.1f MB in the first quarter of the recording and %.1f MB in the last; "+
		"peak over the whole recording %.1f MB, its last window's close and the final write included. ", float64(base.kib)/1024,
		float64(early)/1024, float64(late)/1024, float64(peak)/1024)
	fmt.Fprintf(&b, "A recording without windows (section 6) grows by the KB per 1000 samples shown there, without bound.\n\n")
	b.WriteString("| t | VmRSS MB | gprof CPU s so far | gprof CPU ms per s of recording, last stretch |\n|---:|---:|---:|---:|\n")
	step := math.Max(every.Seconds(), math.Round(D/12))
	prev := windowsPoint{}
	for t := step; t <= D+step/2; t += step {
		p := at(t)
		if p.t == 0 {
			continue
		}
		rate := 1000 * (p.cpu - prev.cpu) / math.Max(p.t-prev.t, 1)
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f |\n", time.Duration(p.t*float64(time.Second)).Round(time.Second), float64(p.kib)/1024, p.cpu, rate)
		prev = p
	}
	// Cost of a window in the long run: CPU in the seconds after each cut
	// above the median of the seconds without one.
	var quiet, after []float64
	cutAt := every.Seconds()
	for i := 1; i < len(pts); i++ {
		d := pts[i].cpu - pts[i-1].cpu
		since := math.Mod(pts[i].t, cutAt)
		if since >= 1 && since < 3 {
			after = append(after, d)
		} else if since >= 4 {
			quiet = append(quiet, d)
		}
	}
	if len(pts) > 1 {
		last := pts[len(pts)-1]
		fmt.Fprintf(&b, "\nCPU: gprof used %.1f s over %.0f s, %.1f ms per second of recording (sampling 2 busy threads at %d Hz, unwinding, and the windows). "+
			"In the two seconds after each cut it used %.1f ms a second (mean), against a median of %.1f ms in the seconds away from cuts: "+
			"about %.0f ms of CPU a window to cut, name and write it, on this loaded machine.\n\n",
			last.cpu, last.t, 1000*last.cpu/last.t, e.longRate, 1000*mean(after), 1000*median(quiet), 1000*(mean(after)-median(quiet))*2)
	}

	fmt.Fprintf(&b, "Per window against perf: `work 2 %d %d` profiled at 1000 Hz (DWARF stacks, %d bytes copied a sample) with and without windows of 1 s, "+
		"by gprof (`--switch-output=1s`) and by perf (`perf record --switch-output=1s`, then `perf script` on each window file, what a perf user runs "+
		"to see one window's stacks with names; gprof's windows have their names). %d interleaved rounds. *CPU a window* is the profiler CPU with windows "+
		"minus that without, in the same round, over the windows past the first.\n\n", units, e.longDepth, perfStack, e.windowsRounds)
	b.WriteString("| variant | profiler CPU s (median) | windows | CPU a window, ms (median) |\n|---|---:|---:|---:|\n")
	for _, v := range variants {
		var cpu, n []float64
		for _, o := range res[v.name] {
			cpu = append(cpu, o.cpu)
			n = append(n, float64(o.windows))
		}
		cell := "—"
		switch v.name {
		case "gprof, windows of 1 s":
			cell = fmt.Sprintf("%.1f", median(gw))
		case "perf, windows of 1 s":
			cell = fmt.Sprintf("%.1f", median(pw))
		}
		fmt.Fprintf(&b, "| %s | %.3f | %.0f | %s |\n", v.name, median(cpu), median(n), cell)
	}
	fmt.Fprintf(&b, "\ngprof's CPU a window over perf's (median of per-round ratios): %.2f×.\n", median(ratios))
	return b.String(), nil
}

func maxRSS(pts []windowsPoint, from, to float64) int64 {
	var v int64
	for _, p := range pts {
		if p.t >= from && p.t <= to {
			v = max(v, p.kib)
		}
	}
	return v
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
