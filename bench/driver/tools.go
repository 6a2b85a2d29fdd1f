//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// A tool is one way of profiling (or not) a launched target.
type tool struct {
	name string
	peer string // the perf tool this one is compared with, for gprof tools
	// perf tools: the 'perf record' arguments before "--".
	perfArgs func(rate int, out string) []string
	// gprof tools: the 'gprof record' arguments before "--".
	gprofArgs func(rate int, out string) []string
}

// outcome is one profiled (or unprofiled) run of a target.
type outcome struct {
	target  targetOut
	profCPU float64 // s of CPU spent by the profiler (record, and perf script) to a symbolicated profile
	recCPU  float64 // of which recording
	samples int64
	lost    int64
	threads map[int]*threadProfile
	maxRSS  int64 // KiB of the profiler (max of it and its children)
}

const perfStack = 16384 // bytes of stack per sample in DWARF mode: gprof's default, given to perf too

var (
	none = tool{name: "unprofiled"}

	gprofFP = tool{name: "gprof fp", peer: "perf fp", gprofArgs: func(rate int, out string) []string {
		return []string{"record", "-q", "--json", "-r", strconv.Itoa(rate), "--call-graph", "fp", "-o", out}
	}}
	gprofDwarf = tool{name: "gprof dwarf", peer: "perf dwarf", gprofArgs: func(rate int, out string) []string {
		return []string{"record", "-q", "--json", "-r", strconv.Itoa(rate), "-o", out}
	}}
	gprofPtrace = tool{name: "gprof ptrace", peer: "perf dwarf", gprofArgs: func(rate int, out string) []string {
		return []string{"record", "-q", "--json", "-r", strconv.Itoa(rate), "--backend", "ptrace", "-o", out}
	}}
	perfFP = tool{name: "perf fp", perfArgs: func(rate int, out string) []string {
		return []string{"record", "-q", "-e", "cpu-clock", "-c", strconv.Itoa(1_000_000_000 / rate), "-g", "-o", out}
	}}
	perfDwarf = tool{name: "perf dwarf", perfArgs: func(rate int, out string) []string {
		return []string{"record", "-q", "-e", "cpu-clock", "-c", strconv.Itoa(1_000_000_000 / rate),
			"--call-graph", "dwarf," + strconv.Itoa(perfStack), "-o", out}
	}}
)

// profile runs target under t at rate in dir and measures it. wantThreads
// asks for per-thread samples and leaf functions (an extra, untimed
// 'gprof report'; perf's come from the timed 'perf script' output).
func (e *env) profile(t tool, rate int, target []string, wantThreads bool) (outcome, error) {
	var o outcome
	switch {
	case t.gprofArgs != nil:
		out := filepath.Join(e.tmp, "g.json.gz")
		args := append(t.gprofArgs(rate, out), "--")
		p, err := execute("", e.gprof, append(args, target...)...)
		if err != nil {
			return o, err
		}
		o.target = parseTarget(p.out)
		s, err := parseSummary(p.out)
		if err != nil {
			return o, fmt.Errorf("%s: %v", t.name, err)
		}
		o.recCPU = p.cpu - o.target.rusage
		o.profCPU = o.recCPU
		o.samples, o.lost, o.maxRSS = s.Samples, s.Lost, p.maxRSS
		if wantThreads {
			if o.threads, err = gprofReport(e.gprof, out); err != nil {
				return o, err
			}
		}
	case t.perfArgs != nil:
		data := filepath.Join(e.tmp, "perf.data")
		args := append(t.perfArgs(rate, data), "--")
		p, err := execute("", "perf", append(args, target...)...)
		if err != nil {
			return o, err
		}
		o.target = parseTarget(p.out)
		txt := filepath.Join(e.tmp, "perf.txt")
		s, err := execute(txt, "perf", "script", "-i", data, "--show-lost-events")
		if err != nil {
			return o, err
		}
		o.recCPU = p.cpu - o.target.rusage
		o.profCPU = o.recCPU + s.cpu
		o.maxRSS = max(p.maxRSS, s.maxRSS)
		if o.threads, o.lost, err = perfScript(txt); err != nil {
			return o, err
		}
		o.samples = totalSamples(o.threads)
	default:
		p, err := execute("", target[0], target[1:]...)
		if err != nil {
			return o, err
		}
		o.target = parseTarget(p.out)
	}
	return o, nil
}
