//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/format/gecko"
)

// ---- 16: an attached busy thread's count ----
//
// testdata/cpulog.c burns CPU in one thread and logs its own CPU clock
// against the wall clock every 20 µs or so. Each recorder attaches to it
// for a few seconds at 1 kHz, quiet and beside two CPU-bound loops, the
// runs interleaved: the thread's samples between its first and its last
// against the CPU time its clock says it had between them. The loops
// share its CPU, so that the scheduler switches it in and out every
// millisecond or two: a sampler whose own wake-ups decide when it is
// switched in or out counts it wrong.

// attachRecorder attaches to cpulog (pid) for secs, writing out, and
// returns the wall times (ns, CLOCK_REALTIME) of its samples of it.
type attachRecorder struct {
	name string
	run  func(pid int, out string, secs float64) ([]int64, error)
}

// cpuLog is cpulog's readings: wall (CLOCK_REALTIME ns) and CPU time.
type cpuLog struct{ wall, cpu []int64 }

// at is the thread's CPU time at wall time w: it ran from a reading on,
// for as long as it took to the next.
func (l cpuLog) at(w int64) (int64, bool) {
	i := sort.Search(len(l.wall), func(i int) bool { return l.wall[i] > w }) - 1
	if i < 0 || i+1 >= len(l.wall) {
		return 0, false
	}
	return l.cpu[i] + min(w-l.wall[i], l.cpu[i+1]-l.cpu[i]), true
}

// attachRun is what one run of cpulog under a recorder gave: samples per
// ms of the thread's CPU time between its first and last sample, that
// time, and the gaps between two samples of more than two intervals (2 ms
// of its CPU time at 1 kHz): how many, and the longest (ms).
type attachRun struct {
	ratio, cpuMs float64
	late         int
	longest      float64
}

// attachOnce runs cpulog under rec.
func (e *env) attachOnce(bin string, rec attachRecorder, out string, secs float64) (run attachRun, err error) {
	cmd := exec.Command(bin)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return run, err
	}
	if err := cmd.Start(); err != nil {
		return run, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		return run, fmt.Errorf("cpulog said %q", lines.Text())
	}
	times, err := rec.run(cmd.Process.Pid, out, secs)
	if err != nil {
		return run, err
	}
	cmd.Process.Signal(syscall.SIGUSR1)
	var l cpuLog
	for lines.Scan() {
		var w, c int64
		if _, err := fmt.Sscan(lines.Text(), &w, &c); err != nil {
			return run, fmt.Errorf("cpulog: %q: %v", lines.Text(), err)
		}
		l.wall, l.cpu = append(l.wall, w), append(l.cpu, c)
	}
	if len(times) < 2 {
		return run, fmt.Errorf("%s: %d samples", rec.name, len(times))
	}
	slices.Sort(times)
	first, ok1 := l.at(times[0])
	last, ok2 := l.at(times[len(times)-1])
	if !ok1 || !ok2 {
		return run, fmt.Errorf("%s: cpulog's readings do not cover the samples", rec.name)
	}
	prev := first
	for _, t := range times[1:] {
		c, _ := l.at(t)
		if gap := float64(c-prev) / 1e6; gap > 2 {
			run.late++
			run.longest = max(run.longest, gap)
		}
		prev = c
	}
	run.cpuMs = float64(last-first) / 1e6
	run.ratio = float64(len(times)-1) / run.cpuMs
	return run, nil
}

// stopAfter interrupts cmd after secs and waits for it. perf record ends
// by the signal itself, once it has written its file.
func stopAfter(cmd *exec.Cmd, secs float64) error {
	time.Sleep(time.Duration(secs * float64(time.Second)))
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGINT {
		return nil
	}
	return err
}

func (e *env) attachSuite() (string, error) {
	bin := filepath.Join(e.tmp, "cpulog")
	if _, err := execute("", "gcc", "-O2", "-o", bin, filepath.Join(e.root, "testdata", "cpulog.c")); err != nil {
		return "", err
	}
	gprof := func(backend string) func(int, string, float64) ([]int64, error) {
		return func(pid int, out string, secs float64) ([]int64, error) {
			cmd := exec.Command(e.gprof, "record", "-q", "-r", "1000", "--backend", backend, "-o", out, "-p", strconv.Itoa(pid))
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			if err := stopAfter(cmd, secs); err != nil {
				return nil, fmt.Errorf("gprof --backend %s: %v", backend, err)
			}
			p, err := gecko.ReadFile(out)
			if err != nil {
				return nil, err
			}
			zero := p.Meta.StartTime.UnixNano()
			var times []int64
			for _, pr := range p.Processes {
				if pr.Pid != pid {
					continue
				}
				for _, th := range pr.Threads {
					for _, t := range th.Samples.Time {
						times = append(times, zero+t)
					}
				}
			}
			return times, nil
		}
	}
	perf := func(pid int, out string, secs float64) ([]int64, error) {
		// perf's sample times on CLOCK_MONOTONIC, moved to the wall clock.
		var mono unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
		offset := time.Now().UnixNano() - mono.Nano()
		data := out + ".data"
		cmd := exec.Command("perf", "record", "-q", "-F", "1000", "-k", "CLOCK_MONOTONIC", "-o", data, "-p", strconv.Itoa(pid))
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if err := stopAfter(cmd, secs); err != nil {
			return nil, fmt.Errorf("perf record: %v", err)
		}
		p, err := execute("", "perf", "script", "-F", "time", "-i", data)
		if err != nil {
			return nil, err
		}
		var times []int64
		for _, line := range strings.Split(string(p.out), "\n") {
			s, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(line), ":"), 64)
			if err == nil {
				times = append(times, int64(s*1e9)+offset)
			}
		}
		return times, nil
	}
	recorders := []attachRecorder{
		{"gprof, perf backend", gprof("perf")},
		{"gprof, ptrace backend", gprof("ptrace")},
		{"perf record -F 1000 -p", perf},
	}
	runs, secs := 5, 3.0
	if e.quick {
		runs, secs = 2, 2
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## 16. An attached busy thread's count\n\n")
	fmt.Fprintf(&b, "`testdata/cpulog.c`: one thread burns CPU and logs its own CPU clock against the wall clock every 20 µs or so. Each recorder attaches to it for %.0f s at 1 kHz, %d interleaved runs each, quiet and beside two CPU-bound shell loops (which share its CPU, so that the scheduler switches it in and out every millisecond or two). *Samples per ms*: the thread's samples between its first and its last, over the CPU time its clock says it had between them; a perfect sampler gets 1.000, within about 0.03 for the 1,000 or so samples of a run beside the loops. Median (min–max). *Late*: the gaps between two samples of more than two intervals (2 ms) of the thread's CPU time, per 1,000 samples, all runs together, and the longest.\n\n", secs, runs)
	b.WriteString("| recorder | quiet: samples per ms of CPU | quiet: late per 1,000 (longest, ms) | beside two loops | beside two loops: late per 1,000 (longest, ms) |\n|---|---:|---:|---:|---:|\n")
	cells := make([][2][]float64, len(recorders))
	type lateness struct {
		late, samples int
		longest       float64
	}
	lates := make([][2]lateness, len(recorders))
	for load := range 2 {
		stop, err := loops(2 * load)
		if err != nil {
			return "", err
		}
		for r := range runs {
			for _, i := range rotate([]int{0, 1, 2}, r) {
				rec := recorders[i]
				got, err := e.attachOnce(bin, rec, filepath.Join(e.tmp, fmt.Sprintf("attach-%d-%d-%d.json", load, i, r)), secs)
				if err != nil {
					stop()
					return "", fmt.Errorf("%s: %w", rec.name, err)
				}
				cells[i][load] = append(cells[i][load], got.ratio)
				l := &lates[i][load]
				l.late += got.late
				l.samples += int(got.ratio*got.cpuMs + 0.5)
				l.longest = max(l.longest, got.longest)
				e.logf("attach: %s, %d loops, run %d: %.3f samples per ms of %.0f ms of CPU; %d gaps over 2 intervals (longest %.2f ms)", rec.name, 2*load, r, got.ratio, got.cpuMs, got.late, got.longest)
			}
		}
		stop()
	}
	for i, rec := range recorders {
		fmt.Fprintf(&b, "| %s |", rec.name)
		for load := range 2 {
			lo, hi := minMax(cells[i][load])
			l := lates[i][load]
			longest := "—"
			if l.late > 0 {
				longest = fmt.Sprintf("%.2f", l.longest)
			}
			fmt.Fprintf(&b, " %.3f (%.3f–%.3f) | %.1f (%s) |", median(cells[i][load]), lo, hi, 1000*float64(l.late)/float64(max(1, l.samples)), longest)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	return b.String(), nil
}
