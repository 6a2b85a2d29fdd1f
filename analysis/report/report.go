// Package report summarizes a profile for reading in a terminal or by a
// script: per thread, the sample count, the CPU time and the hottest
// functions by self and by total time.
//
// Functions are named from the profile's symbols. An address that inlined
// code resolves to counts for every function of its inline stack; its self
// time goes to the innermost one, the code that was actually executing,
// which is also the leaf the Firefox Profiler shows for it. Caller frames
// hold return addresses and are looked up as the processed writer does:
// under the raw address first, then the address minus one.
//
// Total time counts a function once per sample however many times it
// appears on the stack, so recursion cannot push it past 100%.
package report

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gprof-dev/gprof/profile"
)

// Version is the version of the JSON schema WriteJSON emits. It changes
// when a field is removed or changes meaning, not when one is added.
const Version = 1

// DefaultTop is the number of functions listed when Options.Top is 0.
const DefaultTop = 20

// Options controls Build.
type Options struct {
	// Top is how many functions each list holds; 0 means DefaultTop and a
	// negative value means all.
	Top int
	// By is what functions are ranked by and percentages are of: "wall"
	// (samples, the default: with off-CPU samples, wall-clock time) or
	// "cpu" (the CPU time the samples carry).
	By string
	// NoInline counts code inlined into a function as that function's:
	// each address resolves to the function it was compiled into, whose
	// line there is the call site's, as perf report does (its Symbol
	// column) and pprof -noinlines. By default an inlined function has
	// rows of its own, and self time goes to the innermost one.
	NoInline bool
}

// Ranking measures (Options.By).
const (
	ByWall = "wall"
	ByCPU  = "cpu"
)

// Report is the summary of one profile.
type Report struct {
	Version  int    `json:"version"`
	Product  string `json:"product"`
	Interval int64  `json:"interval_ns"`
	Duration int64  `json:"duration_ns"`
	// Samples is the weighted sample count of all threads.
	Samples int64 `json:"samples"`
	// CPU is the CPU time of all threads; CPUEstimated says some of it was
	// estimated as samples × interval because the backend did not know.
	CPU          int64  `json:"cpu_ns"`
	CPUEstimated bool   `json:"cpu_estimated"`
	LostEvents   uint64 `json:"lost_events"`
	// By is what functions are ranked by and percentages are of: "wall"
	// (samples) or "cpu" (CPU time).
	By string `json:"by"`
	// OffCPU says the profile samples threads off the CPU too (record
	// --off-cpu): samples then measure wall-clock time, not CPU time
	// (profile.Profile.OffCPU decides).
	OffCPU bool `json:"off_cpu"`
	// NoStackCPU is CPU time counted in samples' CPU deltas that no stack
	// shows (kernel mode the kernel would not sample), as the recording
	// reported it; NoStackReason says why.
	NoStackCPU    int64  `json:"no_stack_cpu_ns,omitempty"`
	NoStackReason string `json:"no_stack_reason,omitempty"`
	// Processes counts OS processes: the images an exec makes of one
	// process count once (profile.Profile.ProcessCount), as in record's
	// summary.
	Processes int `json:"processes"`
	// Threads lists threads, most samples first (profile order among
	// equals).
	Threads []Thread `json:"threads"`
	// ProcessTotals sums the threads of each process (by pid: the
	// programs one process ran through exec count as one), most samples
	// first.
	ProcessTotals []ProcessTotal `json:"process_totals"`
	// All aggregates every thread; its percentages are of all samples.
	All Summary `json:"all"`
	// folded is Threads with the images of an exec chain as one thread,
	// for the text report.
	folded []Thread
}

// Thread summarizes one thread.
type Thread struct {
	Pid         int    `json:"pid"`
	ProcessName string `json:"process_name"`
	Tid         int    `json:"tid"`
	Name        string `json:"thread_name"`
	Main        bool   `json:"main"`
	// Programs is the chain of programs the thread's process ran through
	// exec, in order, when it ran more than one ("bash", "python3.12").
	// Each program's threads are listed apart, with their own counts;
	// the text report shows the chain as one thread.
	Programs []string `json:"programs,omitempty"`
	// PctOfAll is this thread's share of all samples, in percent.
	PctOfAll float64 `json:"pct_of_all"`
	Summary
}

// ProcessTotal is one process's share of the profile.
type ProcessTotal struct {
	Pid int `json:"pid"`
	// Name is the name of the process's last program.
	Name string `json:"process_name"`
	// Programs is the chain of programs the process ran through exec,
	// when more than one.
	Programs []string `json:"programs,omitempty"`
	Threads  int      `json:"threads"`
	Samples  int64    `json:"samples"`
	CPU      int64    `json:"cpu_ns"`
	PctOfAll float64  `json:"pct_of_all"`
}

// Summary holds the counts and top functions of a thread or of the whole
// profile.
type Summary struct {
	Samples      int64      `json:"samples"`
	CPU          int64      `json:"cpu_ns"`
	CPUEstimated bool       `json:"cpu_estimated"`
	TopSelf      []Function `json:"top_self"`
	TopTotal     []Function `json:"top_total"`
}

// Function is one function's share of a thread or of the profile.
type Function struct {
	Name string `json:"name"`
	// Lib is the name of the binary, empty when unknown.
	Lib string `json:"lib"`
	// File and Line locate the hottest line; empty and 0 when unknown.
	File string `json:"file"`
	Line int    `json:"line"`
	// Self and Total are weighted sample counts.
	Self  int64 `json:"self_samples"`
	Total int64 `json:"total_samples"`
	// SelfCPU and TotalCPU are the CPU time of those samples.
	SelfCPU  int64 `json:"self_cpu_ns"`
	TotalCPU int64 `json:"total_cpu_ns"`
	// SelfPct and TotalPct are percentages of the samples (with --by cpu,
	// of the CPU time) of the list's owner (the thread, or for All the
	// whole profile); SelfPctAll and TotalPctAll are of all of them.
	SelfPct     float64 `json:"self_pct"`
	TotalPct    float64 `json:"total_pct"`
	SelfPctAll  float64 `json:"self_pct_all"`
	TotalPctAll float64 `json:"total_pct_all"`
}

// PythonLib is the Lib of a Python function (profile.CategoryPython).
const PythonLib = "[python]"

// fnKey identifies a function across threads and processes: by name and
// binary, whatever files its lines come from (a function whose body
// #includes generated code, as CPython's interpreter loop does, has lines
// in several files and is still one function). file is set for Python
// functions alone, whose "binary" is the interpreter: two of the same
// name in different files are different functions.
type fnKey struct{ name, lib, file string }

// srcLoc is a source line; locs[0] is "none".
type srcLoc struct {
	file string
	line int
}

// level is one function of an address's inline stack and its line there.
type level struct {
	fn  int32
	loc int32 // index into builder.locs, 0 when the line is unknown
}

type lineKey struct{ fn, loc int32 }

// counts accumulates one summary.
type counts struct {
	samples, cpu int64
	estimated    bool
	self, total  []int64 // by function id
	selfCPU      []int64 // by function id, ns
	totalCPU     []int64
	selfLine     map[lineKey]int64
	totalLine    map[lineKey]int64
}

func newCounts() *counts {
	return &counts{selfLine: map[lineKey]int64{}, totalLine: map[lineKey]int64{}}
}

func (c *counts) grow(n int) {
	for len(c.self) < n {
		c.self = append(c.self, 0)
		c.total = append(c.total, 0)
		c.selfCPU = append(c.selfCPU, 0)
		c.totalCPU = append(c.totalCPU, 0)
	}
}

type builder struct {
	p      *profile.Profile
	fns    []fnKey
	fnIdx  map[fnKey]int32
	fnFile []string // the first file seen for each function
	locs   []srcLoc
	locIdx map[srcLoc]int32
	kernel profile.LibKey
	kernOK bool
	all    *counts
	byCPU  bool
	// noInline keeps only the outer function of each address.
	noInline bool
}

// Build summarizes p.
func Build(p *profile.Profile, opts Options) Report {
	top := opts.Top
	if top == 0 {
		top = DefaultTop
	}
	b := newBuilder(p)
	b.byCPU = opts.By == ByCPU
	b.noInline = opts.NoInline
	b.kernel, b.kernOK = p.Symbols.KernelLib()
	r := Report{
		Version: Version, Product: p.Meta.Product, Interval: int64(p.Meta.Interval),
		Duration: p.Meta.Duration, LostEvents: p.Meta.LostEvents, Processes: p.ProcessCount(), Threads: []Thread{},
		ProcessTotals: []ProcessTotal{}, By: ByWall, OffCPU: p.OffCPU(),
	}
	if b.byCPU {
		r.By = ByCPU
	}
	if ms, err := strconv.ParseFloat(p.Meta.Extra["no_stack_cpu_ms"], 64); err == nil && ms > 0 {
		r.NoStackCPU = int64(ms * 1e6)
		r.NoStackReason = p.Meta.Extra["no_stack_reason"]
	}
	type pending struct {
		t Thread
		c *counts
	}
	// Threads are listed per image as recorded (the JSON's list, which
	// scripts read), and folded for the text report: the images an exec
	// made of one OS process are one process there, as in ProcessTotals,
	// so a thread that ran bash, then a shim, then python is one thread,
	// named after its programs.
	var threads, folded []pending
	for _, group := range p.OSProcesses() {
		var programs []string
		byTid := map[int]int{} // tid -> index into folded
		first := len(threads)
		for _, pr := range group {
			if len(programs) == 0 || programs[len(programs)-1] != pr.Name {
				programs = append(programs, pr.Name)
			}
			libs := sortedLibs(pr)
			for _, th := range pr.Threads {
				if th == nil {
					continue
				}
				c := b.thread(libs, th)
				name := th.Name
				if name == "" && th.Main {
					name = pr.Name
				}
				t := Thread{Pid: pr.Pid, ProcessName: pr.Name, Tid: th.Tid, Name: name, Main: th.Main}
				threads = append(threads, pending{t, c})
				if i, ok := byTid[th.Tid]; ok {
					prev := &folded[i]
					sum := newCounts()
					sum.add(prev.c)
					sum.add(c)
					t.Main = t.Main || prev.t.Main
					folded[i] = pending{t, sum}
					continue
				}
				byTid[th.Tid] = len(folded)
				folded = append(folded, pending{t, c})
			}
		}
		if len(programs) > 1 {
			for i := first; i < len(threads); i++ {
				threads[i].t.Programs = programs
			}
			for _, i := range byTid {
				folded[i].t.Programs = programs
				folded[i].t.ProcessName = programs[len(programs)-1]
			}
		}
	}
	all := b.all.samples
	r.Samples, r.CPU, r.CPUEstimated = all, b.all.cpu, b.all.estimated
	bySamples := func(x, y pending) int { return cmp.Compare(y.c.samples, x.c.samples) }
	slices.SortStableFunc(threads, bySamples)
	slices.SortStableFunc(folded, bySamples)
	for _, t := range folded {
		t.t.PctOfAll = pct(t.c.samples, all)
		t.t.Summary = b.summary(t.c, all, top)
		r.folded = append(r.folded, t.t)
	}
	procIdx := map[int]int{}
	for _, t := range threads {
		t.t.PctOfAll = pct(t.c.samples, all)
		t.t.Summary = b.summary(t.c, all, top)
		r.Threads = append(r.Threads, t.t)
		i, ok := procIdx[t.t.Pid]
		if !ok {
			i = len(r.ProcessTotals)
			procIdx[t.t.Pid] = i
			r.ProcessTotals = append(r.ProcessTotals, ProcessTotal{Pid: t.t.Pid})
		}
		pt := &r.ProcessTotals[i]
		if len(t.t.Programs) > len(pt.Programs) {
			pt.Programs = t.t.Programs
		}
		pt.Threads++
		pt.Samples += t.c.samples
		pt.CPU += t.c.cpu
	}
	for _, pr := range p.Processes {
		if i, ok := procIdx[pr.Pid]; ok && pr != nil {
			r.ProcessTotals[i].Name = pr.Name // the last program of the pid
		}
	}
	for i := range r.ProcessTotals {
		r.ProcessTotals[i].PctOfAll = pct(r.ProcessTotals[i].Samples, all)
	}
	slices.SortStableFunc(r.ProcessTotals, func(x, y ProcessTotal) int { return cmp.Compare(y.Samples, x.Samples) })
	r.All = b.summary(b.all, all, top)
	return r
}

// pct returns part/whole in percent, rounded to 1e-4 so that results are
// exact where they can be and JSON output is stable.
func pct(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return math.Round(float64(part)*100*1e4/float64(whole)) / 1e4
}

func newBuilder(p *profile.Profile) *builder {
	return &builder{p: p, fnIdx: map[fnKey]int32{}, all: newCounts(), locs: []srcLoc{{}}, locIdx: map[srcLoc]int32{}}
}

// fn interns function k; file is where the frame that names it says it is.
func (b *builder) fn(k fnKey, file string) int32 {
	if i, ok := b.fnIdx[k]; ok {
		if b.fnFile[i] == "" {
			b.fnFile[i] = file
		}
		return i
	}
	i := int32(len(b.fns))
	b.fns = append(b.fns, k)
	b.fnFile = append(b.fnFile, file)
	b.fnIdx[k] = i
	return i
}

// loc interns a source line; a line of 0 is unknown.
func (b *builder) loc(file string, line int) int32 {
	if line <= 0 {
		return 0
	}
	k := srcLoc{file, line}
	if i, ok := b.locIdx[k]; ok {
		return i
	}
	i := int32(len(b.locs))
	b.locs = append(b.locs, k)
	b.locIdx[k] = i
	return i
}

// sortedLibs returns a copy of pr's libs ordered by start.
func sortedLibs(pr *profile.Process) []profile.Lib {
	libs := slices.Clone(pr.Libs)
	slices.SortStableFunc(libs, func(a, b profile.Lib) int { return cmp.Compare(a.Start, b.Start) })
	return libs
}

func hex(a uint64) string { return "0x" + strconv.FormatUint(a, 16) }

// levels resolves frame f to its inline stack, outer function first.
func (b *builder) levels(libs []profile.Lib, f profile.Frame, caller bool) []level {
	if f.Label != "" {
		if f.Category == profile.CategoryPython {
			// A Python function: in place of a library, "[python]"
			// tells it from a native function of the same name.
			return []level{{fn: b.fn(fnKey{name: f.Label, lib: PythonLib, file: f.File}, f.File), loc: b.loc(f.File, int(f.Line))}}
		}
		return []level{{fn: b.fn(fnKey{name: f.Label}, "")}}
	}
	var (
		syms    []profile.SymbolFrame
		libName string
		name    string
	)
	if l := profile.FindLib(libs, f.Address); l != nil {
		rel := l.Rel(f.Address)
		syms = b.p.Symbols.LookupFrame(l.Key(), rel, caller)
		libName = l.Name
		name = l.Name + "+" + hex(rel)
	} else {
		if b.kernOK && f.Category == profile.CategoryKernel {
			syms = b.p.Symbols.LookupFrame(b.kernel, f.Address, caller)
			libName = "kernel"
		}
		name = hex(f.Address)
	}
	if len(syms) == 0 {
		return []level{{fn: b.fn(fnKey{name: name, lib: libName}, "")}}
	}
	if b.noInline {
		syms = syms[:1]
	}
	out := make([]level, len(syms))
	for i, s := range syms {
		out[i] = level{fn: b.fn(fnKey{name: s.Function, lib: libName}, s.File), loc: b.loc(s.File, s.Line)}
	}
	return out
}

func (b *builder) thread(libs []profile.Lib, th *profile.Thread) *counts {
	c := newCounts()
	sm := &th.Samples
	st := &th.Stacks
	ns := len(st.Frame)
	weights := make([]int64, ns)
	cpuWeights := make([]int64, ns)
	interval := int64(b.p.Meta.Interval)
	for i, s := range sm.Stack {
		w := int64(1)
		if sm.Weight != nil && i < len(sm.Weight) {
			w = int64(sm.Weight[i])
		}
		c.samples += w
		cpu := w * interval
		if i < len(sm.CPUDelta) && sm.CPUDelta[i] >= 0 {
			cpu = sm.CPUDelta[i]
		} else {
			c.estimated = true
		}
		c.cpu += cpu
		if s >= 0 && int(s) < ns {
			weights[s] += w
			cpuWeights[s] += cpu
		}
	}
	nf := len(th.Frames.Frames)
	// cache[k] holds the levels of frame k/2 in role k%2 (1 = caller);
	// hits[k][i] sums the weight level i was counted with, folded into
	// per-line counts at the end rather than with a map update per visit.
	cache := make([][]level, 2*nf)
	hits := make([][]int64, 2*nf)
	resolve := func(f int32, caller bool) int {
		if f < 0 || int(f) >= nf {
			return -1
		}
		k := 2 * int(f)
		if caller {
			k++
		}
		if cache[k] == nil {
			cache[k] = b.levels(libs, th.Frames.Frames[f], caller)
			hits[k] = make([]int64, len(cache[k]))
		}
		return k
	}
	// stamp[fn] == s+1 marks fn as already counted for stack s, which
	// counts recursive functions once per sample.
	var stamp []int32
	for s := 0; s < ns; s++ {
		w, cw := weights[s], cpuWeights[s]
		if w == 0 && cw == 0 {
			continue
		}
		caller := false
		steps := 0
		for t := int32(s); t >= 0 && int(t) < ns && steps <= ns; t = st.Prefix[t] {
			steps++ // a malformed prefix cycle must not hang the report
			k := resolve(st.Frame[t], caller)
			caller = true
			if k < 0 {
				continue
			}
			lv := cache[k]
			c.grow(len(b.fns))
			for len(stamp) < len(b.fns) {
				stamp = append(stamp, 0)
			}
			if k%2 == 0 {
				in := lv[len(lv)-1]
				c.self[in.fn] += w
				c.selfCPU[in.fn] += cw
				if in.loc > 0 {
					c.selfLine[lineKey{in.fn, in.loc}] += w
				}
			}
			for i := len(lv) - 1; i >= 0; i-- {
				fn := lv[i].fn
				if stamp[fn] == int32(s)+1 {
					continue
				}
				stamp[fn] = int32(s) + 1
				c.total[fn] += w
				c.totalCPU[fn] += cw
				hits[k][i] += w
			}
		}
	}
	for k, lv := range cache {
		for i, l := range lv {
			if h := hits[k][i]; h != 0 && l.loc > 0 {
				c.totalLine[lineKey{l.fn, l.loc}] += h
			}
		}
	}
	c.grow(len(b.fns))
	b.merge(c)
	return c
}

func (b *builder) merge(c *counts) { b.all.add(c) }

// add adds c's counts to a.
func (a *counts) add(c *counts) {
	a.samples += c.samples
	a.cpu += c.cpu
	a.estimated = a.estimated || c.estimated
	a.grow(len(c.self))
	for i := range c.self {
		a.self[i] += c.self[i]
		a.total[i] += c.total[i]
		a.selfCPU[i] += c.selfCPU[i]
		a.totalCPU[i] += c.totalCPU[i]
	}
	for k, v := range c.selfLine {
		a.selfLine[k] += v
	}
	for k, v := range c.totalLine {
		a.totalLine[k] += v
	}
}

func (b *builder) summary(c *counts, all int64, top int) Summary {
	s := Summary{Samples: c.samples, CPU: c.cpu, CPUEstimated: c.estimated, TopSelf: []Function{}, TopTotal: []Function{}}
	c.grow(len(b.fns))
	hot := b.hotLines(c)
	self, total, whole, allWhole := c.self, c.total, c.samples, all
	if b.byCPU {
		self, total, whole, allWhole = c.selfCPU, c.totalCPU, c.cpu, b.all.cpu
	}
	mk := func(fn int32) Function {
		k := b.fns[fn]
		file, line := b.fnFile[fn], 0
		if l, ok := hot[fn]; ok {
			file, line = b.locs[l].file, b.locs[l].line
		}
		f := Function{
			Name: k.name, Lib: k.lib, File: file, Line: line,
			Self: c.self[fn], Total: c.total[fn], SelfCPU: c.selfCPU[fn], TotalCPU: c.totalCPU[fn],
			SelfPct: pct(self[fn], whole), TotalPct: pct(total[fn], whole),
			SelfPctAll: pct(self[fn], allWhole), TotalPctAll: pct(total[fn], allWhole),
		}
		return f
	}
	s.TopSelf = b.top(self, top, mk)
	s.TopTotal = b.top(total, top, mk)
	return s
}

// hotLines picks, per function, the line with the most self samples, or
// failing that the most total samples; ties go to the lower line, then the
// file first in order. It returns indexes into b.locs.
func (b *builder) hotLines(c *counts) map[int32]int32 {
	best := map[int32]lineKey{}
	bestN := map[int32]int64{}
	pick := func(m map[lineKey]int64, skip func(int32) bool) {
		for k, n := range m {
			if skip(k.fn) {
				continue
			}
			if cur, ok := bestN[k.fn]; !ok || n > cur || n == cur && b.lessLoc(k.loc, best[k.fn].loc) {
				best[k.fn], bestN[k.fn] = k, n
			}
		}
	}
	pick(c.selfLine, func(int32) bool { return false })
	hasSelf := map[int32]bool{}
	for fn := range best {
		hasSelf[fn] = true
	}
	pick(c.totalLine, func(fn int32) bool { return hasSelf[fn] })
	out := make(map[int32]int32, len(best))
	for fn, k := range best {
		out[fn] = k.loc
	}
	return out
}

func (b *builder) lessLoc(x, y int32) bool {
	lx, ly := b.locs[x], b.locs[y]
	return lx.line < ly.line || lx.line == ly.line && lx.file < ly.file
}

func (b *builder) top(v []int64, n int, mk func(int32) Function) []Function {
	var ids []int32
	for i, x := range v {
		if x != 0 {
			ids = append(ids, int32(i))
		}
	}
	slices.SortFunc(ids, func(i, j int32) int {
		if c := cmp.Compare(v[j], v[i]); c != 0 {
			return c
		}
		a, b := b.fns[i], b.fns[j]
		if c := cmp.Compare(a.name, b.name); c != 0 {
			return c
		}
		return cmp.Compare(a.lib, b.lib)
	})
	if n >= 0 && len(ids) > n {
		ids = ids[:n]
	}
	out := make([]Function, len(ids))
	for i, id := range ids {
		out[i] = mk(id)
	}
	return out
}

// formatDuration renders ns for humans: seconds to three decimals,
// milliseconds to two, microseconds to one, smaller values in whole ns.
func formatDuration(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + " s"
	case d >= time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + " ms"
	case d >= time.Microsecond:
		return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) + " µs"
	}
	return strconv.FormatInt(ns, 10) + " ns"
}
