// Package diff compares profiles: what changed between a base and a new
// recording, by function, thread and process, and whether a change is
// bigger than the run-to-run noise.
//
// Each side may hold several profiles of repeated runs. A figure's noise is
// the standard error of the difference of the two sides' means, from two
// sources, whichever is larger on each side: the spread of the runs (when a
// side has two or more), and the sampling error of a share estimated from
// N samples (binomial, sqrt(p(1-p)/N)), which is all a single run tells. A
// change counts as real only when it is larger than Sigmas standard errors
// and, when both sides have several runs, no run of one side lies within
// the range of the other's.
package diff

import (
	"cmp"
	"math"
	"slices"

	"github.com/gprof-dev/gprof/analysis/report"
	"github.com/gprof-dev/gprof/profile"
)

// Version is the version of the JSON schema. It changes when a field is
// removed or changes meaning, not when one is added.
const Version = 1

// Sigmas is how many standard errors a change must exceed to be real.
const Sigmas = 3

// Result is the comparison of two sides.
type Result struct {
	Version int `json:"version"`
	// By says what shares are of: "wall" (samples) or "cpu" (CPU time).
	By        string  `json:"by"`
	Base      Side    `json:"base"`
	New       Side    `json:"new"`
	CPU       Change  `json:"cpu"`
	Functions []Func  `json:"functions"`
	Threads   []Group `json:"threads"`
	Processes []Group `json:"processes"`
	// Rules holds the --fail-if rules in the order given; Failed says
	// whether any of them failed.
	Rules  []RuleResult `json:"rules"`
	Failed bool         `json:"failed"`
}

// Side describes the profiles of one side.
type Side struct {
	Runs    int      `json:"runs"`
	Files   []string `json:"files"`
	Samples []int64  `json:"samples"`
	CPU     []int64  `json:"cpu_ns"`
}

// Change is one figure on both sides: the means of the runs, the change,
// and whether it is larger than the noise.
type Change struct {
	Base float64 `json:"base"`
	New  float64 `json:"new"`
	// Delta is New-Base; Pct is the change in percent of Base (0 when Base
	// is 0 and New is not: see Appeared).
	Delta float64 `json:"delta"`
	Pct   float64 `json:"change_pct"`
	// Noise is one standard error of Delta.
	Noise       float64 `json:"noise"`
	Significant bool    `json:"significant"`
	Appeared    bool    `json:"appeared,omitempty"`
}

// Func is one function's change. Shares are in percent of the side's
// samples, so their Delta is in percentage points; times are in ns. A
// function's self share leaves out the samples taken in the kernel with no
// kernel stack ([kernel]): their share follows the machine's load (of two
// recordings of one program beside a busy neighbour, one had a fifth of
// its samples there, the other a twentieth) and would move every
// function's self share the other way. Total shares are of all samples: a
// function's total counts the kernel time on top of it. The pseudo-frames'
// own shares are of all samples too; [blocked] and [preempted] stay in
// every share, as off-CPU wall-clock time is what --by wall measures.
type Func struct {
	Name       string `json:"name"`
	Lib        string `json:"lib"`
	SelfShare  Change `json:"self_pct"`
	TotalShare Change `json:"total_pct"`
	SelfTime   Change `json:"self_ns"`
	TotalTime  Change `json:"total_ns"`
}

// Group is a thread name's or process name's change, summed over every
// thread or process of that name.
type Group struct {
	Name  string `json:"name"`
	Share Change `json:"pct"`
	CPU   Change `json:"cpu_ns"`
}

// Input is one profile of a side, already read and named.
type Input struct {
	File    string
	Profile *profile.Profile
}

// run is what one profile contributes.
type run struct {
	samples, cpu int64
	// whole is what shares are of: samples, or with By cpu the CPU time
	// in ns; n is the number of samples behind it (for the sampling
	// error); unit is the ns that one count of self and total stands for.
	whole, n int64
	// code is whole less [kernel]'s self count: what functions' self
	// shares are of.
	code        int64
	unit        float64
	byCPU       bool
	self, total map[fnKey]int64
	threads     map[string][2]int64 // samples, cpu
	procs       map[string][2]int64
	libs        map[string]string // function name to its binary's name, for display
}

// fnKey names a function across the two sides by its name alone: the
// binary that holds it is often renamed or rebuilt between a base and a new
// build, and a function's identity to the reader is its name.
type fnKey struct{ name string }

func summarize(p *profile.Profile, by string) run {
	r := report.Build(p, report.Options{Top: -1, By: by})
	out := run{samples: r.Samples, cpu: r.CPU, whole: r.Samples, n: r.Samples, self: map[fnKey]int64{}, total: map[fnKey]int64{},
		threads: map[string][2]int64{}, procs: map[string][2]int64{}, libs: map[string]string{}}
	switch {
	case by == report.ByCPU:
		out.byCPU, out.whole, out.unit = true, r.CPU, 1
	case r.OffCPU:
		// Every sample is an interval of wall-clock time.
		out.unit = float64(r.Interval)
	case r.Samples > 0:
		// Every sample stands for the same CPU time with cpu-clock
		// sampling, and a fair estimate of it otherwise.
		out.unit = float64(r.CPU) / float64(r.Samples)
	}
	out.code = out.whole
	for _, f := range r.All.TopSelf {
		v := f.Self
		if out.byCPU {
			v = f.SelfCPU
		}
		out.self[fnKey{f.Name}] += v
		if f.Name == profile.KernelLabel {
			out.code -= v
		}
		out.libs[f.Name] = f.Lib
	}
	for _, f := range r.All.TopTotal {
		if out.byCPU {
			out.total[fnKey{f.Name}] += f.TotalCPU
		} else {
			out.total[fnKey{f.Name}] += f.Total
		}
		out.libs[f.Name] = f.Lib
	}
	for _, t := range r.Threads {
		add := func(m map[string][2]int64, name string) {
			v := m[name]
			m[name] = [2]int64{v[0] + t.Samples, v[1] + t.CPU}
		}
		add(out.threads, t.Name)
		add(out.procs, t.ProcessName)
	}
	return out
}

// Compare compares base with new by wall-clock samples and checks rules
// against the result.
func Compare(base, new []Input, rules []Rule) Result {
	return CompareBy(base, new, rules, report.ByWall)
}

// CompareBy is Compare with functions' shares and times measured by
// report.ByWall (samples) or report.ByCPU (the CPU time samples carry).
func CompareBy(base, new []Input, rules []Rule, by string) Result {
	b, n := runs(base, by), runs(new, by)
	res := Result{Version: Version, By: by, Base: side(base, b), New: side(new, n), Functions: []Func{}, Threads: []Group{}, Processes: []Group{}, Rules: []RuleResult{}}
	res.CPU = compareValues(values(b, func(r run) float64 { return float64(r.cpu) }),
		values(n, func(r run) float64 { return float64(r.cpu) }), nil, nil)

	keys := map[fnKey]bool{}
	for _, rs := range [][]run{b, n} {
		for _, r := range rs {
			for k := range r.total {
				keys[k] = true
			}
		}
	}
	for k := range keys {
		f := Func{Name: k.name}
		for _, r := range slices.Concat(n, b) {
			if l, ok := r.libs[k.name]; ok {
				f.Lib = l
				break
			}
		}
		get := func(m func(run) map[fnKey]int64) func(run) int64 { return func(r run) int64 { return m(r)[k] } }
		selfOf := func(r run) int64 { return r.code }
		if pseudo(k.name) {
			selfOf = all
		}
		f.SelfShare = compareShares(b, n, get(func(r run) map[fnKey]int64 { return r.self }), selfOf)
		f.TotalShare = compareShares(b, n, get(func(r run) map[fnKey]int64 { return r.total }), all)
		f.SelfTime = compareTimes(b, n, get(func(r run) map[fnKey]int64 { return r.self }))
		f.TotalTime = compareTimes(b, n, get(func(r run) map[fnKey]int64 { return r.total }))
		res.Functions = append(res.Functions, f)
	}
	slices.SortFunc(res.Functions, func(x, y Func) int {
		return cmp.Or(cmp.Compare(math.Abs(y.SelfShare.Delta), math.Abs(x.SelfShare.Delta)),
			cmp.Compare(math.Abs(y.TotalShare.Delta), math.Abs(x.TotalShare.Delta)),
			cmp.Compare(x.Name, y.Name))
	})
	res.Threads = groups(b, n, func(r run) map[string][2]int64 { return r.threads })
	res.Processes = groups(b, n, func(r run) map[string][2]int64 { return r.procs })
	for _, rule := range rules {
		rr := rule.check(&res)
		res.Failed = res.Failed || !rr.Passed
		res.Rules = append(res.Rules, rr)
	}
	return res
}

// all is a run's whole: what shares of all samples are of.
func all(r run) int64 { return r.whole }

func runs(in []Input, by string) []run {
	out := make([]run, len(in))
	for i, p := range in {
		out[i] = summarize(p.Profile, by)
	}
	return out
}

func side(in []Input, rs []run) Side {
	s := Side{Runs: len(rs), Files: []string{}, Samples: []int64{}, CPU: []int64{}}
	for i, r := range rs {
		s.Files = append(s.Files, in[i].File)
		s.Samples = append(s.Samples, r.samples)
		s.CPU = append(s.CPU, r.cpu)
	}
	return s
}

func values(rs []run, f func(run) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

// compareShares compares a count's share of whole (all samples or CPU
// time, or those in code), in percent.
func compareShares(b, n []run, count, whole func(run) int64) Change {
	share := func(r run) float64 {
		if whole(r) == 0 {
			return 0
		}
		return 100 * float64(count(r)) / float64(whole(r))
	}
	return compareValues(values(b, share), values(n, share), binomial(b, count, whole, 100), binomial(n, count, whole, 100))
}

// compareTimes compares a count's time: the count times what one count
// stands for (run.unit): CPU ns, the interval of wall-clock time of an
// off-CPU profile's samples, or the run's CPU time over its samples, which
// is exact when every sample stands for the same CPU time (cpu-clock
// sampling) and a fair estimate otherwise.
func compareTimes(b, n []run, count func(run) int64) Change {
	t := func(r run) float64 { return r.unit * float64(count(r)) }
	meanWhole := func(rs []run) float64 {
		return mean(values(rs, func(r run) float64 { return r.unit * float64(r.whole) }))
	}
	return compareValues(values(b, t), values(n, t), binomial(b, count, all, meanWhole(b)), binomial(n, count, all, meanWhole(n)))
}

// binomial returns the variance of the mean of a share of whole scaled by
// scale, estimated from all of a side's samples pooled: p(1-p)/N·scale²,
// N the samples behind whole.
func binomial(rs []run, count, whole func(run) int64, scale float64) *float64 {
	var c, sum int64
	var total float64
	for _, r := range rs {
		c += count(r)
		sum += whole(r)
		if r.whole > 0 {
			total += float64(r.n) * float64(whole(r)) / float64(r.whole)
		}
	}
	if total == 0 || sum == 0 {
		return nil
	}
	p := float64(c) / float64(sum)
	v := p * (1 - p) / float64(total) * scale * scale
	// A share never seen on one side still has a sampling error: with no
	// hits in N samples, p is below about 1/N (the rule of three, 3/N, at
	// 95%); one hit's worth keeps a function that appears from nowhere with
	// a handful of samples from counting as certain.
	if c == 0 {
		v = (1 / float64(total)) * (1 / float64(total)) * scale * scale
	}
	return &v
}

func groups(b, n []run, m func(run) map[string][2]int64) []Group {
	names := map[string]bool{}
	for _, rs := range [][]run{b, n} {
		for _, r := range rs {
			for k := range m(r) {
				names[k] = true
			}
		}
	}
	out := []Group{}
	for name := range names {
		samples := func(r run) int64 {
			if r.byCPU {
				return m(r)[name][1]
			}
			return m(r)[name][0]
		}
		cpu := func(r run) float64 { return float64(m(r)[name][1]) }
		out = append(out, Group{Name: name, Share: compareShares(b, n, samples, all),
			CPU: compareValues(values(b, cpu), values(n, cpu), nil, nil)})
	}
	slices.SortFunc(out, func(x, y Group) int {
		return cmp.Or(cmp.Compare(math.Abs(y.Share.Delta), math.Abs(x.Share.Delta)), cmp.Compare(x.Name, y.Name))
	})
	return out
}

// compareValues compares the per-run values of two sides. floorB and
// floorN, when given, are lower bounds on the variance of each side's mean
// (the sampling error a single run cannot show).
func compareValues(b, n []float64, floorB, floorN *float64) Change {
	c := Change{Base: mean(b), New: mean(n)}
	c.Delta = c.New - c.Base
	switch {
	case c.Base != 0:
		c.Pct = 100 * c.Delta / c.Base
	case c.New != 0:
		c.Appeared = true
	}
	vb, vn := varianceOfMean(b), varianceOfMean(n)
	if floorB != nil {
		vb = max(vb, *floorB)
	}
	if floorN != nil {
		vn = max(vn, *floorN)
	}
	c.Noise = math.Sqrt(vb + vn)
	c.Significant = math.Abs(c.Delta) > Sigmas*c.Noise && !overlap(b, n)
	c.Base, c.New, c.Delta, c.Pct, c.Noise = round(c.Base), round(c.New), round(c.Delta), round(c.Pct), round(c.Noise)
	return c
}

// overlap reports whether both sides have several runs and their ranges
// overlap: then some run of one side looks like the other side, and a
// difference of means is not trusted.
func overlap(b, n []float64) bool {
	if len(b) < 2 || len(n) < 2 {
		return false
	}
	return slices.Min(b) <= slices.Max(n) && slices.Min(n) <= slices.Max(b)
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// varianceOfMean is the sample variance over n, 0 for a single run.
func varianceOfMean(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	m := mean(v)
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return s / float64(len(v)-1) / float64(len(v))
}

// round keeps four decimals, so JSON is stable and readable.
func round(x float64) float64 { return math.Round(x*1e4) / 1e4 }
