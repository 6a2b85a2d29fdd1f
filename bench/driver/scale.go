//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// ---- 11: attaching at scale ----
//
// What attaching to a process with thousands of idle threads costs each
// backend (setup, files, gprof's CPU) and whether its busy threads still
// get their samples; and the same for a system-wide recording (-a).

// scaleRun is one attach to testdata/threads.c.
type scaleRun struct {
	setupMs, cpu, secs float64 // gprof's setup, its CPU (s), the recording's length (s)
	files              int
	layout             string
	ratio              float64 // the busy threads' lowest samples / (CPU × rate)
	// idleRate and busyRate are gprof's CPU (s per s) while the target's
	// threads all wait, and while its busy ones run.
	idleRate, busyRate float64
}

// tasksCPU is the CPU time (s) of process pid, the threads that have
// exited included, from its CPU clock (clock_getcpuclockid's encoding).
func tasksCPU(pid int) float64 {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(int32(^pid<<3|2)), uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return float64(ts.Nano()) / 1e9
}

var busyLine = regexp.MustCompile(`thread (\d+) cpu_ns (\d+)`)

// runScale attaches backend to a process of idle waiting threads and 2
// busy ones (each burning secs of CPU once gprof has had settle to attach),
// under `ulimit -n` nofile when it is not 0.
func (e *env) runScale(backend string, idle, nofile int, secs float64) (scaleRun, error) {
	var r scaleRun
	fix := exec.Command(e.threads, strconv.Itoa(idle), "2", strconv.FormatFloat(secs, 'f', -1, 64))
	stdin, _ := fix.StdinPipe()
	stdout, _ := fix.StdoutPipe()
	if err := fix.Start(); err != nil {
		return r, err
	}
	defer func() { fix.Process.Kill(); fix.Wait() }()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		return r, fmt.Errorf("threads %d: no ready line", idle)
	}
	out, sum := filepath.Join(e.tmp, "scale.json.gz"), filepath.Join(e.tmp, "scale-summary.json")
	limit := ""
	if nofile > 0 {
		limit = fmt.Sprintf("ulimit -n %d && ", nofile)
	}
	g := exec.Command("sh", "-c", limit+`exec "$0" "$@"`, e.gprof, "record", "-q", "--backend", backend,
		"-p", strconv.Itoa(fix.Process.Pid), "-o", out, "--json-output", sum)
	var gerr bytes.Buffer
	g.Stderr = &gerr
	if err := g.Start(); err != nil {
		return r, err
	}
	// gprof's CPU while only idle threads are there (from 1.5 s, when it
	// has attached, to 3 s), and while the busy ones run.
	time.Sleep(1500 * time.Millisecond)
	c0, t0 := tasksCPU(g.Process.Pid), time.Now()
	time.Sleep(1500 * time.Millisecond)
	c1, t1 := tasksCPU(g.Process.Pid), time.Now()
	r.idleRate = (c1 - c0) / t1.Sub(t0).Seconds()
	fmt.Fprintln(stdin, "go")
	var report strings.Builder
	for lines.Scan() {
		report.WriteString(lines.Text() + "\n")
	}
	c2, t2 := tasksCPU(g.Process.Pid), time.Now()
	r.busyRate = (c2 - c1) / t2.Sub(t1).Seconds()
	fix.Wait()
	if err := g.Wait(); err != nil {
		return r, fmt.Errorf("gprof record --backend %s of %d idle threads: %v: %s", backend, idle, err, tail(gerr.Bytes()))
	}
	if ru, ok := g.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.cpu = tv(ru.Utime) + tv(ru.Stime)
	}
	var s struct {
		Duration float64 `json:"duration_s"`
		Layout   string  `json:"event_layout"`
		Files    int     `json:"event_files"`
	}
	data, err := os.ReadFile(sum)
	if err != nil {
		return r, err
	}
	json.Unmarshal(data, &s)
	r.secs, r.layout, r.files = s.Duration, s.Layout, s.Files
	r.setupMs, _ = strconv.ParseFloat(profileExtra(out)[backend+"_setup_ms"], 64)
	threads, err := gprofReport(e.gprof, out)
	if err != nil {
		return r, err
	}
	r.ratio = 2
	for _, m := range busyLine.FindAllStringSubmatch(report.String(), -1) {
		tid, _ := strconv.Atoi(m[1])
		ns, _ := strconv.ParseFloat(m[2], 64)
		var n int64
		if tp := threads[tid]; tp != nil {
			n = tp.samples
		}
		r.ratio = min(r.ratio, float64(n)/(ns/1e6))
	}
	return r, nil
}

func (e *env) scaleSuite() (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "## 11. Attaching at scale\n\n")
	e.threads = filepath.Join(e.tmp, "threads")
	if _, err := execute("", "gcc", "-O2", "-g", "-pthread", "-o", e.threads, "testdata/threads.c"); err != nil {
		return "", err
	}
	secs := e.fidSeconds
	type cell struct {
		backend string
		idle    int
		nofile  int
	}
	cells := []cell{
		{"perf", 0, 0}, {"perf", 2000, 0}, {"perf", 10000, 0}, {"perf", 10000, 1024},
		{"ptrace", 0, 0}, {"ptrace", 2000, 0}, {"ptrace", 10000, 0},
	}
	runs := map[cell][]scaleRun{}
	for r := 0; r < e.fidRounds; r++ {
		for _, c := range rotate(cells, r) {
			run, err := e.runScale(c.backend, c.idle, c.nofile, secs)
			if err != nil {
				return "", err
			}
			e.logf("scale %s idle %d nofile %d: setup %.0f ms, files %d (%s), cpu %.2fs over %.2fs (idle %.3f, busy %.3f per s), ratio %.3f", c.backend, c.idle, c.nofile, run.setupMs, run.files, run.layout, run.cpu, run.secs, run.idleRate, run.busyRate, run.ratio)
			runs[c] = append(runs[c], run)
		}
	}
	var hard syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &hard)
	fmt.Fprintf(&b, "`gprof record -p` of `testdata/threads.c`: IDLE threads blocked in `read()` and 2 busy threads that wait until gprof has had 3 s to attach, then each burn %g s of their own CPU; 1 kHz, gprof as root, %d interleaved rounds, medians. *Setup*: from the start of recording to every target thread sampled (the profile's `perf_setup_ms` / `ptrace_setup_ms`). *Files*: the perf backend's event files and their layout (the summary's `event_files`, `event_layout`); the file limit here is %d unless the row says `ulimit -n`. *gprof CPU*: its getrusage over the whole recording, setup and writing the profile included (the 3 s wait, then about %g s of the busy threads, longer on a loaded machine); *while idle* and *while busy*: its CPU seconds per second (its CPU clock) from 1.5 s to 3 s, when only idle threads are there, and from then until the busy threads are done. *Samples / expected*: the lower busy thread's samples over its CPU time × rate.\n\n", secs, e.fidRounds, hard.Max, secs)
	b.WriteString("| backend | idle threads | setup ms | files | gprof CPU s | while idle | while busy | samples / expected |\n|---|---:|---:|---|---:|---:|---:|---:|\n")
	for _, c := range cells {
		rs := runs[c]
		var setup, cpu, idleRate, busyRate, ratio []float64
		for _, r := range rs {
			setup = append(setup, r.setupMs)
			cpu = append(cpu, r.cpu)
			idleRate = append(idleRate, r.idleRate)
			busyRate = append(busyRate, r.busyRate)
			ratio = append(ratio, r.ratio)
		}
		files := "—"
		if c.backend == "perf" {
			files = fmt.Sprintf("%d (%s)", rs[0].files, rs[0].layout)
		}
		idle := fmt.Sprint(c.idle)
		if c.nofile > 0 {
			idle += fmt.Sprintf(", `ulimit -n %d`", c.nofile)
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %.2f | %.3f | %.3f | %.3f |\n", c.backend, idle, median(setup), files, median(cpu), median(idleRate), median(busyRate), median(ratio))
	}

	// System-wide: -a while split runs, beside a CPU-bound loop.
	stop, err := loops(1)
	if err != nil {
		return "", err
	}
	defer stop()
	var ratio, cpu, procs []float64
	for r := 0; r < e.fidRounds; r++ {
		out := filepath.Join(e.tmp, "sys.json.gz")
		p, err := execute("", e.gprof, "record", "-q", "--json", "-a", "-o", out, "--", e.split, "2", strconv.FormatFloat(secs, 'f', -1, 64))
		if err != nil {
			return "", err
		}
		t := parseTarget(p.out)
		var own float64
		for _, c := range t.threadCPU {
			own += c
		}
		cpu = append(cpu, p.cpu-own)
		if i := bytes.Index(p.out, []byte("\n{")); i >= 0 {
			var s struct {
				Processes int `json:"processes"`
			}
			json.Unmarshal(p.out[i+1:], &s)
			procs = append(procs, float64(s.Processes))
		}
		threads, err := gprofReport(e.gprof, out)
		if err != nil {
			return "", err
		}
		lo := 2.0
		for tid, c := range t.threadCPU {
			if tp := threads[tid]; tp != nil {
				lo = min(lo, float64(tp.samples)/(c*1000))
			} else {
				lo = 0
			}
		}
		ratio = append(ratio, lo)
		e.logf("scale -a: split workers' ratio %.3f, gprof cpu %.2fs, %v processes", lo, cpu[len(cpu)-1], procs)
	}
	fmt.Fprintf(&b, "\n`gprof record -a -- split 2 %g` beside a CPU-bound loop (every process on the machine, until split exits; %d rounds, medians): split's workers got %.3f of their expected samples (the lower of the two), gprof used %.2f s of CPU, and the profile held %.0f processes.\n\n", secs, e.fidRounds, median(ratio), median(cpu), median(procs))
	return b.String(), nil
}
