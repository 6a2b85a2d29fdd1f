//go:build linux

package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ---- 9: samplers on every machine ----
//
// Does each backend take a sample per interval of a busy thread's CPU time,
// quiet and beside CPU-bound processes, and what does that cost the target?
// Where do the ptrace backend's stops land, and how long do they take,
// against this machine's own signal latency?

// samplerRun is one run of split under a backend (or none).
type samplerRun struct {
	threadCPU   map[int]float64 // s, as the threads measured it
	wall        float64         // s, the target's own, from /usr/bin/time
	samples     map[int]int64   // per thread
	self        map[string]int64
	ratio       float64 // the summary's sample_ratio_min
	profCPU     float64 // s of gprof's own CPU
	stopLatency string  // the ptrace backend's stop latencies, from the profile
}

var wallLine = regexp.MustCompile(`(?m)^target_wall_s ([0-9.]+)$`)

// runSplit runs split (2 threads, secs of CPU each) under backend ("" for
// none) at rate.
func (e *env) runSplit(backend string, rate int, secs float64) (samplerRun, error) {
	var r samplerRun
	target := []string{"/usr/bin/time", "-f", "target_wall_s %e", e.split, "2", strconv.FormatFloat(secs, 'f', -1, 64)}
	out := filepath.Join(e.tmp, "s.json.gz")
	var p proc
	var err error
	if backend == "" {
		p, err = execute("", target[0], target[1:]...)
	} else {
		args := []string{"record", "-q", "--json", "--backend", backend, "-r", strconv.Itoa(rate), "-o", out, "--"}
		p, err = execute("", e.gprof, append(args, target...)...)
	}
	if err != nil {
		return r, err
	}
	t := parseTarget(p.out)
	r.threadCPU = t.threadCPU
	if m := wallLine.FindSubmatch(p.stderr); m != nil {
		r.wall, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	if backend == "" {
		return r, nil
	}
	var cpu float64
	for _, c := range t.threadCPU {
		cpu += c
	}
	r.profCPU = p.cpu - cpu
	if i := bytes.Index(p.out, []byte("\n{")); i >= 0 {
		var s struct {
			Min *float64 `json:"sample_ratio_min"`
		}
		if json.Unmarshal(p.out[i+1:], &s) == nil && s.Min != nil {
			r.ratio = *s.Min
		}
	}
	threads, err := gprofReport(e.gprof, out)
	if err != nil {
		return r, err
	}
	r.samples, r.self = map[int]int64{}, map[string]int64{}
	for tid := range t.threadCPU {
		if tp := threads[tid]; tp != nil {
			r.samples[tid] = tp.samples
			for f, n := range tp.self {
				r.self[f] += n
			}
		}
	}
	if backend == "ptrace" {
		r.stopLatency = profileExtra(out)["ptrace_stop_us"]
	}
	return r, nil
}

// profileExtra reads gprof's own metadata from a Gecko profile.
func profileExtra(path string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil
	}
	var p struct {
		Meta struct {
			Gprof struct {
				Extra map[string]string `json:"extra"`
			} `json:"gprof"`
		} `json:"meta"`
	}
	json.Unmarshal(data, &p)
	return p.Meta.Gprof.Extra
}

// loops starts n CPU-bound shell loops; the returned function ends them.
func loops(n int) (stop func(), err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}
	for range n {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			stop()
			return nil, err
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

// splitError returns the largest |share − truth| of work_a, work_b and
// work_c among their samples, in points.
func splitError(self map[string]int64) float64 {
	want := map[string]float64{"work_a": 50, "work_b": 30, "work_c": 20}
	var sum float64
	for f := range want {
		sum += float64(self[f])
	}
	var worst float64
	for f, w := range want {
		worst = math.Max(worst, math.Abs(100*float64(self[f])/math.Max(sum, 1)-w))
	}
	return worst
}

func (e *env) samplersSuite() (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "## 9. Samplers on every machine\n\n")

	// This machine's signal latency: what a sampler that stops threads on
	// other CPUs would wait for.
	siglat := filepath.Join(e.tmp, "siglat")
	if _, err := execute("", "gcc", "-O2", "-pthread", "-o", siglat, "bench/fixture/siglat.c"); err != nil {
		return "", err
	}
	sl, err := execute("", siglat, "400")
	if err != nil {
		return "", err
	}
	b.WriteString("This machine's signal latency (`bench/fixture/siglat.c`: a thread spinning on CPU 1 is sent SIGUSR1 by a real-time thread, 400 times from CPU 0 and 400 times from CPU 1; microseconds from tgkill to the handler):\n\n")
	b.WriteString("| sent from | mean µs | median | 90th | max |\n|---|---:|---:|---:|---:|\n")
	for _, line := range strings.Split(strings.TrimSpace(string(sl.out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 9 {
			name := map[string]string{"other": "another CPU", "same": "the thread's own CPU"}[f[0]]
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, f[2], f[4], f[6], f[8])
		}
	}
	b.WriteString("\nOn some VMs of this kind a signal (or PTRACE_INTERRUPT) to a thread running on another CPU takes effect only at that CPU's next timer tick (HZ=250: a mean of 1.7–1.9 ms and a maximum of 3.3–3.8 ms were measured on one, against 7 µs from the same CPU). The ptrace backend never relies on it: a stopper per CPU stops only the threads running on its own CPU.\n\n")

	// Fidelity, cost and stop latency by load and rate.
	secs := e.fidSeconds
	rounds := e.fidRounds
	type cell struct {
		ratio, wall, cpu, ferr []float64
		lat                    []string
	}
	cells := map[string]*cell{}
	key := func(load, rate int, backend string) string { return fmt.Sprintf("%d|%d|%s", load, rate, backend) }
	backends := []string{"", "perf", "ptrace"}
	for load := 0; load <= 2; load++ {
		stop, err := loops(load)
		if err != nil {
			return "", err
		}
		for _, rate := range []int{100, 1000} {
			for r := 0; r < rounds; r++ {
				for _, bk := range rotate(backends, r) {
					run, err := e.runSplit(bk, rate, secs)
					if err != nil {
						stop()
						return "", err
					}
					c := cells[key(load, rate, bk)]
					if c == nil {
						c = &cell{}
						cells[key(load, rate, bk)] = c
					}
					c.wall = append(c.wall, run.wall)
					if bk != "" {
						for tid, cpu := range run.threadCPU {
							c.ratio = append(c.ratio, float64(run.samples[tid])/(cpu*float64(rate)))
						}
						c.cpu = append(c.cpu, run.profCPU)
						c.ferr = append(c.ferr, splitError(run.self))
						if run.stopLatency != "" {
							c.lat = append(c.lat, run.stopLatency)
						}
					}
					e.logf("samplers load %d %4d Hz %-6s wall %.2fs samples %v cpu %v", load, rate, bk, run.wall, run.samples, run.threadCPU)
				}
			}
		}
		stop()
	}
	fmt.Fprintf(&b, "`testdata/split.c` with 2 worker threads, each burning %g s of its own CPU, launched unprofiled, under the perf backend and under the ptrace backend (gprof as root: the ptrace stoppers run SCHED_FIFO), with 0, 1 or 2 CPU-bound `sh -c 'while :; do :; done'` loops beside it, %d interleaved rounds per cell. "+
		"*Samples / expected*: a worker's samples over its CPU time × rate (median and minimum over workers and rounds). *Target wall*: the target's own elapsed time (`/usr/bin/time`), median; *slowdown* against the unprofiled runs of the same cell. *gprof CPU*: gprof's own CPU time (getrusage of gprof and its children minus the workers' CPU), median. *Split error*: the largest |share − truth| of work_a/b/c, median (max).\n\n", secs, rounds)
	b.WriteString("| loops | rate | backend | samples / expected | min | target wall s | slowdown | gprof CPU s | split error pp |\n|---:|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for load := 0; load <= 2; load++ {
		for _, rate := range []int{100, 1000} {
			base := median(cells[key(load, rate, "")].wall)
			fmt.Fprintf(&b, "| %d | %d Hz | unprofiled | — | — | %.2f | — | — | — |\n", load, rate, base)
			for _, bk := range backends[1:] {
				c := cells[key(load, rate, bk)]
				lo, _ := minMax(c.ratio)
				_, fmax := minMax(c.ferr)
				fmt.Fprintf(&b, "| %d | %d Hz | %s | %.3f | %.3f | %.2f | %+.0f%% | %.3f | %.2f (%.2f) |\n", load, rate, bk,
					median(c.ratio), lo, median(c.wall), 100*(median(c.wall)/base-1), median(c.cpu), median(c.ferr), fmax)
			}
		}
	}
	b.WriteString("\nThe ptrace backend's stop latency, from PTRACE_INTERRUPT to the stop being seen by its stopper (the profile's `ptrace_stop_us`: a stopper sleeps 25 µs after its interrupts, then looks every 25 to 100 µs; powers of two of µs), from the first run of each cell at 1 kHz:\n\n")
	b.WriteString("| loops | stop latency |\n|---:|---|\n")
	for load := 0; load <= 2; load++ {
		if c := cells[key(load, 1000, "ptrace")]; c != nil && len(c.lat) > 0 {
			fmt.Fprintf(&b, "| %d | %s |\n", load, c.lat[0])
		}
	}

	// The known split, ten runs per load.
	runs := 10
	if e.quick {
		runs = 3
	}
	fmt.Fprintf(&b, "\nThe known split, %d runs per load and backend at 1 kHz, 2 workers × %g s of CPU (about %d samples a run): the largest deviation of a function's share from 50/30/20 in each run, points.\n\n", runs, 2*secs, int(2*secs*1000))
	b.WriteString("| loops | backend | runs within 2 points | deviation per run |\n|---:|---|---:|---|\n")
	for load := 0; load <= 2; load++ {
		stop, err := loops(load)
		if err != nil {
			return "", err
		}
		devs := map[string][]float64{}
		for r := 0; r < runs; r++ {
			for _, bk := range rotate(backends[1:], r) {
				run, err := e.runSplit(bk, 1000, 2*secs)
				if err != nil {
					stop()
					return "", err
				}
				devs[bk] = append(devs[bk], splitError(run.self))
			}
		}
		stop()
		for _, bk := range backends[1:] {
			in := 0
			var s []string
			for _, d := range devs[bk] {
				if d <= 2 {
					in++
				}
				s = append(s, fmt.Sprintf("%.1f", d))
			}
			fmt.Fprintf(&b, "| %d | %s | %d/%d | %s |\n", load, bk, in, len(devs[bk]), strings.Join(s, " "))
		}
	}

	// xz's hot addresses, ptrace against perf.
	if xz, err := exec.LookPath("xz"); err == nil {
		data := filepath.Join(e.tmp, "xzdata")
		buf := make([]byte, 20<<20)
		x := uint64(88172645463325252)
		for i := range buf {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			buf[i] = byte(x >> 32)
		}
		if err := os.WriteFile(data, buf, 0o644); err != nil {
			return "", err
		}
		shares := map[string]map[string][]float64{}
		xzRounds := max(rounds, 2)
		for r := 0; r < xzRounds; r++ {
			for _, bk := range rotate(backends[1:], r) {
				out := filepath.Join(e.tmp, "xz.json.gz")
				if _, err := execute(os.DevNull, e.gprof, "record", "-q", "--no-symbols", "--backend", bk, "-o", out, "--", xz, "-6", "-T1", "-c", data); err != nil {
					return "", err
				}
				p, err := execute("", e.gprof, "report", "--json", "--top", "-1", out)
				if err != nil {
					return "", err
				}
				var rep struct {
					All struct {
						TopSelf []struct {
							Name string  `json:"name"`
							Pct  float64 `json:"self_pct_all"`
						} `json:"top_self"`
					} `json:"all"`
				}
				if err := json.Unmarshal(p.out, &rep); err != nil {
					return "", err
				}
				if shares[bk] == nil {
					shares[bk] = map[string][]float64{}
				}
				// Shares of user-mode samples: the perf backend also sees
				// time in interrupts and the kernel's own sampling work,
				// which ptrace counts at the interrupted instruction.
				var user float64
				for _, f := range rep.All.TopSelf {
					if f.Name != "[kernel]" {
						user += f.Pct
					}
				}
				for _, f := range rep.All.TopSelf {
					if f.Name != "[kernel]" {
						shares[bk][f.Name] = append(shares[bk][f.Name], 100*f.Pct/math.Max(user, 1))
					}
				}
				e.logf("samplers xz %s", bk)
			}
		}
		var top []string
		for name := range shares["perf"] {
			top = append(top, name)
		}
		sort.Slice(top, func(i, j int) bool { return median(shares["perf"][top[i]]) > median(shares["perf"][top[j]]) })
		fmt.Fprintf(&b, "\nxz's hot addresses: `xz -6 -T1` compressing 20 MB that do not compress, launched under each backend with `--no-symbols`, %d interleaved rounds; the 6 addresses where the perf backend finds most user-mode samples, with each backend's median share of user-mode samples (the perf backend also counts time in interrupts and in the kernel's own sampling, as `[kernel]`, which the ptrace backend counts at the interrupted instruction).\n\n", xzRounds)
		b.WriteString("| address | perf backend % | ptrace backend % |\n|---|---:|---:|\n")
		for i, name := range top {
			if i == 6 {
				break
			}
			fmt.Fprintf(&b, "| %s | %.1f | %.1f |\n", name, median(shares["perf"][name]), median(shares["ptrace"][name]))
		}
	}
	return b.String(), nil
}
