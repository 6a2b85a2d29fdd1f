package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gprof-dev/gprof/profile"
)

// The latency view, as perf 6.15 defines it
// (tools/perf/Documentation/cpu-and-latency-overheads.txt): each sample
// weighs its period divided by the parallelism at its moment, the number
// of the recording's threads on a CPU then, so that the weights add up to
// wall-clock time rather than CPU time. A function that runs alone for
// 9 s of a 10 s program, which then runs 128 threads for 1 s, is 90 % of
// the latency and 6.6 % of the CPU time.
//
// The parallelism comes from the profile's counters named
// ParallelismCounter (record --latency, or --off-cpu, or a perf.data file
// with context switches), one per process: its rate between two of its
// samples is how many of the process's threads were on a CPU. Like perf
// 6.15, which counts every task it recorded, the view adds up every
// process of the profile; in a system-wide recording, which perf 6.15
// refuses to weigh, it counts the sample's own process alone (as perf
// does since). A sample's parallelism is at least 1, its own thread ran,
// and at most the machine's CPUs, as perf clamps it.

// ParallelismCounter is the name (and category) of the counters the
// latency view reads.
const ParallelismCounter = "Parallelism"

// latencyScale turns a sample's latency weight, 1/parallelism, into the
// whole number a sample table's weight holds.
const latencyScale = 1 << 16

// Latency is the latency view of a profile: functions by their share of
// wall-clock time, with their share of CPU time beside.
type Latency struct {
	Version int `json:"version"`
	// Event is what the samples count; Samples how many there are.
	Event   string `json:"event"`
	Samples int64  `json:"samples"`
	// Wall is the wall-clock time the samples stand for and CPU their CPU
	// time, both in ns of samples × interval; Parallelism their ratio,
	// the average number of threads on a CPU.
	Wall        int64   `json:"wall_ns"`
	CPU         int64   `json:"cpu_ns"`
	Parallelism float64 `json:"parallelism"`
	// PerProcess says the parallelism was each sample's own process's
	// (a system-wide recording), not the whole recording's.
	PerProcess bool `json:"per_process"`
	// ByParallelism splits the time by the parallelism samples had, as
	// perf report --sort parallelism.
	ByParallelism []ParallelismShare `json:"by_parallelism"`
	// TopSelf and TopTotal list functions by latency, self and total.
	TopSelf  []LatencyFunction `json:"top_self"`
	TopTotal []LatencyFunction `json:"top_total"`
}

// ParallelismShare is the share of time spent at one parallelism.
type ParallelismShare struct {
	Parallelism int     `json:"parallelism"`
	LatencyPct  float64 `json:"latency_pct"`
	CPUPct      float64 `json:"cpu_pct"`
}

// LatencyFunction is a function's share of wall-clock and CPU time.
type LatencyFunction struct {
	Name       string  `json:"name"`
	Lib        string  `json:"lib"`
	File       string  `json:"file"`
	Line       int     `json:"line"`
	LatencyPct float64 `json:"latency_pct"`
	CPUPct     float64 `json:"cpu_pct"`
}

// ErrNoParallelism is the error for a profile that has no parallelism
// counters to weigh its samples with.
var ErrNoParallelism = errors.New("the profile has no parallelism counter to weigh its samples with: record with 'gprof record --latency' (or --off-cpu; from perf, 'perf record --latency' or --switch-events)")

// parallelismAt answers the parallelism at a time, from the counters.
type parallelismAt struct {
	all    []*profile.Counter // every process's
	byProc map[*profile.Process]*profile.Counter
	cpus   int // the machine's, 0 when not known
}

func newParallelismAt(p *profile.Profile) (*parallelismAt, bool) {
	pa := &parallelismAt{byProc: map[*profile.Process]*profile.Counter{}, cpus: p.Meta.LogicalCPUs}
	for _, pr := range p.Processes {
		if pr == nil {
			continue
		}
		for i := range pr.Counters {
			if c := &pr.Counters[i]; c.Name == ParallelismCounter && len(c.Time) == len(c.Count) && len(c.Time) > 1 {
				pa.all = append(pa.all, c)
				pa.byProc[pr] = c
			}
		}
	}
	return pa, len(pa.all) > 0
}

// rateAt is a counter's parallelism at time t: its rate over the stretch
// that holds t; 0 outside its samples.
func rateAt(c *profile.Counter, t int64) float64 {
	i := sort.Search(len(c.Time), func(i int) bool { return c.Time[i] >= t })
	if i == 0 || i == len(c.Time) {
		return 0
	}
	d := c.Time[i] - c.Time[i-1]
	if d <= 0 {
		return 0
	}
	return float64(c.Count[i]) / float64(d)
}

func (pa *parallelismAt) at(pr *profile.Process, t int64, perProcess bool) float64 {
	n := pa.sum(pr, t, perProcess)
	if pa.cpus > 0 {
		// As perf: no more threads run than there are CPUs (switch
		// records out of order can say otherwise for a moment).
		n = min(n, float64(pa.cpus))
	}
	return max(n, 1)
}

func (pa *parallelismAt) sum(pr *profile.Process, t int64, perProcess bool) float64 {
	var n float64
	if perProcess {
		if c := pa.byProc[pr]; c != nil {
			n = rateAt(c, t)
		}
	} else {
		for _, c := range pa.all {
			n += rateAt(c, t)
		}
	}
	return n
}

// LatencyWeights returns a profile whose samples weigh their latency: each
// sample's weight times latencyScale over the parallelism at its moment,
// and the parallelism each sample had, rounded, by thread. p's counters
// must hold the parallelism (ErrNoParallelism otherwise).
func LatencyWeights(p *profile.Profile) (*profile.Profile, map[*profile.Thread][]int, error) {
	pa, ok := newParallelismAt(p)
	if !ok {
		return nil, nil, ErrNoParallelism
	}
	perProcess := p.Meta.Extra["system_wide"] == "true"
	levels := map[*profile.Thread][]int{}
	out := *p
	out.Processes = mapThreads(p, func(pr *profile.Process, th *profile.Thread) *profile.Thread {
		t := *th
		s := th.Samples
		w := make([]int32, len(s.Stack))
		lv := make([]int, len(s.Stack))
		for i, tm := range s.Time {
			n := pa.at(pr, tm, perProcess)
			base := int64(1)
			if s.Weight != nil {
				base = int64(s.Weight[i])
			}
			w[i] = int32(min(math.Round(float64(base)*latencyScale/n), math.MaxInt32))
			lv[i] = int(math.Round(n))
		}
		s.Weight = w
		t.Samples = s
		levels[&t] = lv
		return &t
	})
	return &out, levels, nil
}

// BuildLatency makes the latency view of p, listing top functions (0:
// DefaultTop, -1: all).
func BuildLatency(p *profile.Profile, top int, noInline bool) (Latency, error) {
	lp, levels, err := LatencyWeights(p)
	if err != nil {
		return Latency{}, err
	}
	cpu := Build(p, Options{Top: -1, NoInline: noInline})
	lat := Build(lp, Options{Top: -1, NoInline: noInline})
	l := Latency{Version: Version, Event: p.Meta.Extra["event"], Samples: cpu.Samples, PerProcess: p.Meta.Extra["system_wide"] == "true",
		TopSelf: []LatencyFunction{}, TopTotal: []LatencyFunction{}, ByParallelism: []ParallelismShare{}}
	interval := int64(p.Meta.Interval)
	l.CPU = cpu.Samples * interval
	l.Wall = lat.Samples * interval / latencyScale
	if l.Wall > 0 {
		l.Parallelism = math.Round(float64(l.CPU)/float64(l.Wall)*100) / 100
	}
	// By parallelism: each sample's latency and CPU weight at its level.
	latBy, cpuBy := map[int]int64{}, map[int]int64{}
	var latAll, cpuAll int64
	for _, pr := range lp.Processes {
		for _, th := range pr.Threads {
			lv := levels[th]
			for i, w := range th.Samples.Weight {
				latBy[lv[i]] += int64(w)
				latAll += int64(w)
				c := int64(math.Round(float64(w) * float64(lv[i])))
				cpuBy[lv[i]] += c
				cpuAll += c
			}
		}
	}
	for n, w := range latBy {
		l.ByParallelism = append(l.ByParallelism, ParallelismShare{Parallelism: n, LatencyPct: pct(w, latAll), CPUPct: pct(cpuBy[n], cpuAll)})
	}
	slices.SortFunc(l.ByParallelism, func(a, b ParallelismShare) int { return cmp.Compare(a.Parallelism, b.Parallelism) })
	cpuSelf, cpuTotal := map[fnKey]float64{}, map[fnKey]float64{}
	for _, f := range cpu.All.TopSelf {
		cpuSelf[fnKey{f.Name, f.Lib, f.File}] = f.SelfPct
	}
	for _, f := range cpu.All.TopTotal {
		cpuTotal[fnKey{f.Name, f.Lib, f.File}] = f.TotalPct
	}
	if top == 0 {
		top = DefaultTop
	}
	pick := func(fs []Function, self bool) []LatencyFunction {
		out := []LatencyFunction{}
		for _, f := range fs {
			if top >= 0 && len(out) >= top {
				break
			}
			lf := LatencyFunction{Name: f.Name, Lib: f.Lib, File: f.File, Line: f.Line, LatencyPct: f.TotalPct, CPUPct: cpuTotal[fnKey{f.Name, f.Lib, f.File}]}
			if self {
				lf.LatencyPct, lf.CPUPct = f.SelfPct, cpuSelf[fnKey{f.Name, f.Lib, f.File}]
			}
			out = append(out, lf)
		}
		return out
	}
	l.TopSelf = pick(lat.All.TopSelf, true)
	l.TopTotal = pick(lat.All.TopTotal, false)
	return l, nil
}

// WriteLatencyText writes the latency view as aligned text, as perf
// report --latency shows it: latency first, CPU overhead beside.
func WriteLatencyText(w io.Writer, l Latency) error {
	var b strings.Builder
	what := "threads of the recording on a CPU"
	if l.PerProcess {
		what = "threads of the sample's process on a CPU"
	}
	fmt.Fprintf(&b, "Latency view: %d %s samples, each weighing 1/parallelism (%s at its moment), as perf report --latency\n",
		l.Samples, orUnknown(l.Event), what)
	fmt.Fprintf(&b, "wall-clock %s of CPU time %s: %.2f threads on a CPU on average\n\n", formatDuration(l.Wall), formatDuration(l.CPU), l.Parallelism)
	b.WriteString("  By parallelism\n")
	b.WriteString("     latency       cpu  parallelism\n")
	for _, s := range l.ByParallelism {
		fmt.Fprintf(&b, "  %10s%10s  %d\n", pctString(s.LatencyPct), pctString(s.CPUPct), s.Parallelism)
	}
	for _, list := range []struct {
		title string
		fs    []LatencyFunction
	}{{"Top by self latency", l.TopSelf}, {"Top by total latency", l.TopTotal}} {
		fmt.Fprintf(&b, "\n  %s\n     latency       cpu  function\n", list.title)
		for _, f := range list.fs {
			loc := ""
			if f.File != "" {
				loc = "  " + f.File
				if f.Line > 0 {
					loc += ":" + strconv.Itoa(f.Line)
				}
			}
			if f.Lib != "" {
				loc += " [" + f.Lib + "]"
			}
			fmt.Fprintf(&b, "  %10s%10s  %s%s\n", pctString(f.LatencyPct), pctString(f.CPUPct), printable(f.Name), printable(loc))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteLatencyJSON writes the latency view as indented JSON (schema in
// docs/formats.md: snake_case, ns, percentages from 0 to 100).
func WriteLatencyJSON(w io.Writer, l Latency) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	e.SetEscapeHTML(false)
	return e.Encode(l)
}
