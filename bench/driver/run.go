//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is the outcome of one command run to completion.
type proc struct {
	cpu    float64 // s of user+system CPU: the process and its reaped descendants
	wall   float64 // s
	maxRSS int64   // KiB, the largest of the process and its reaped descendants (as /usr/bin/time -v)
	out    []byte  // stdout, unless it went to a file
	stderr []byte
}

// execute runs a command. stdout goes to the file toFile when set.
func execute(toFile string, name string, args ...string) (proc, error) {
	cmd := exec.Command(name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if toFile != "" {
		f, err := os.Create(toFile)
		if err != nil {
			return proc{}, err
		}
		defer f.Close()
		cmd.Stdout = f
	}
	start := time.Now()
	err := cmd.Run()
	p := proc{wall: time.Since(start).Seconds(), out: out.Bytes(), stderr: errb.Bytes()}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			p.cpu = tv(ru.Utime) + tv(ru.Stime)
			p.maxRSS = ru.Maxrss
		}
	}
	if err != nil {
		return p, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, tail(errb.Bytes()))
	}
	return p, nil
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 400 {
		s = "..." + s[len(s)-400:]
	}
	return s
}

// targetOut is what the fixtures print: per-thread CPU and, for work, the
// process's own getrusage CPU.
type targetOut struct {
	threadCPU map[int]float64 // tid -> s
	rusage    float64         // s; 0 when not printed
}

var threadLine = regexp.MustCompile(`^thread (\d+) cpu_ns (\d+)$`)

func parseTarget(out []byte) targetOut {
	t := targetOut{threadCPU: map[int]float64{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := threadLine.FindStringSubmatch(line); m != nil {
			tid, _ := strconv.Atoi(m[1])
			ns, _ := strconv.ParseFloat(m[2], 64)
			t.threadCPU[tid] = ns / 1e9
		} else if v, ok := strings.CutPrefix(line, "rusage_ns "); ok {
			ns, _ := strconv.ParseFloat(v, 64)
			t.rusage = ns / 1e9
		}
	}
	return t
}

// gprofSummary is the part of 'gprof record --json' the benchmarks use.
type gprofSummary struct {
	Samples   int64 `json:"samples"`
	Lost      int64 `json:"lost"`
	Discarded int64 `json:"discarded_samples"`
}

// parseSummary finds the JSON summary gprof prints after the target's own
// output on the same stdout.
func parseSummary(out []byte) (gprofSummary, error) {
	var s gprofSummary
	i := bytes.Index(out, []byte("\n{"))
	if i < 0 {
		if !bytes.HasPrefix(out, []byte("{")) {
			return s, fmt.Errorf("no JSON summary in %q", tail(out))
		}
		i = -1
	}
	err := json.Unmarshal(out[i+1:], &s)
	return s, err
}

// threadProfile is one thread's samples and leaf functions.
type threadProfile struct {
	samples int64
	self    map[string]int64
}

// gprofReport reads per-thread samples and self samples by function from
// 'gprof report --json'.
func gprofReport(gprof, file string) (map[int]*threadProfile, error) {
	p, err := execute("", gprof, "report", "--json", "--top", "-1", file)
	if err != nil {
		return nil, err
	}
	var r struct {
		Threads []struct {
			Tid     int   `json:"tid"`
			Samples int64 `json:"samples"`
			TopSelf []struct {
				Name string `json:"name"`
				Self int64  `json:"self_samples"`
			} `json:"top_self"`
		} `json:"threads"`
	}
	if err := json.Unmarshal(p.out, &r); err != nil {
		return nil, fmt.Errorf("gprof report --json: %v", err)
	}
	m := map[int]*threadProfile{}
	for _, t := range r.Threads {
		tp := &threadProfile{samples: t.Samples, self: map[string]int64{}}
		for _, f := range t.TopSelf {
			tp.self[f.Name] += f.Self
		}
		m[t.Tid] = tp
	}
	return m, nil
}

var (
	perfHeader = regexp.MustCompile(`^.*?\s(\d+)\s+(?:\[\d+\]\s+)?\d+\.\d+:\s+(.*)$`)
	perfLost   = regexp.MustCompile(`PERF_RECORD_LOST(?:_SAMPLES)?\s+lost\s+(\d+)`)
)

// perfScript reads 'perf script --show-lost-events' output: samples and
// leaf functions per thread, and lost samples.
func perfScript(file string) (map[int]*threadProfile, int64, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	m := map[int]*threadProfile{}
	var lost int64
	var cur *threadProfile
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			cur = nil
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if cur != nil { // the first frame line is the leaf
				fields := strings.Fields(line)
				sym := "[unknown]"
				if len(fields) >= 2 {
					sym = fields[1]
					if i := strings.LastIndex(sym, "+0x"); i > 0 {
						sym = sym[:i]
					}
				}
				cur.self[sym]++
				cur = nil
			}
			continue
		}
		h := perfHeader.FindStringSubmatch(line)
		if h == nil {
			continue
		}
		if l := perfLost.FindStringSubmatch(h[2]); l != nil {
			n, _ := strconv.ParseInt(l[1], 10, 64)
			lost += n
			continue
		}
		if strings.HasPrefix(h[2], "PERF_RECORD") {
			continue
		}
		tid, _ := strconv.Atoi(h[1])
		tp := m[tid]
		if tp == nil {
			tp = &threadProfile{self: map[string]int64{}}
			m[tid] = tp
		}
		tp.samples++
		cur = tp
	}
	return m, lost, sc.Err()
}

func totalSamples(m map[int]*threadProfile) int64 {
	var n int64
	for _, t := range m {
		n += t.samples
	}
	return n
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minMax(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	return slices.Min(xs), slices.Max(xs)
}
