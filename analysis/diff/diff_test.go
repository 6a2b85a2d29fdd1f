package diff

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/analysis/report"
	"github.com/gprof-dev/gprof/profile"
)

// sampled returns a profile of n samples drawn at random with the given
// weights for leaf functions called from main, one ms of CPU each.
func sampled(rng *rand.Rand, n int, weights map[string]float64) *profile.Profile {
	th := &profile.Thread{Tid: 1, Name: "worker", Main: true}
	var names []string
	var total float64
	for _, k := range []string{"work_a", "work_b", "work_c", "work_d"} {
		if w, ok := weights[k]; ok {
			names = append(names, k)
			total += w
		}
	}
	for i := 0; i < n; i++ {
		x := rng.Float64() * total
		leaf := names[len(names)-1]
		for _, k := range names {
			if x < weights[k] {
				leaf = k
				break
			}
			x -= weights[k]
		}
		s := th.InternStack([]profile.Frame{{Label: leaf}, {Label: "main"}})
		th.Samples.Add(s, int64(i)*int64(time.Millisecond), int64(time.Millisecond))
	}
	return &profile.Profile{
		Meta:      profile.Meta{Interval: time.Millisecond},
		Processes: []*profile.Process{{Pid: 1, Name: "fixture", Threads: []*profile.Thread{th}}},
	}
}

func inputs(rng *rand.Rand, runs, n int, w map[string]float64) []Input {
	var out []Input
	for i := 0; i < runs; i++ {
		out = append(out, Input{File: "run", Profile: sampled(rng, n, w)})
	}
	return out
}

func mustRules(t *testing.T, s ...string) []Rule {
	t.Helper()
	var out []Rule
	for _, x := range s {
		r, err := ParseRule(x)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

var split = map[string]float64{"work_a": 50, "work_b": 30, "work_c": 20}

func TestSameProgramPasses(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		for _, runs := range []int{1, 3} {
			res := Compare(inputs(rng, runs, 5000, split), inputs(rng, runs, 5000, split),
				mustRules(t, "self:*>+5pp", "total:*>+5pp", "self:*>+10%"))
			if res.Failed {
				t.Fatalf("seed %d, %d runs: same program flagged: %+v", seed, runs, res.Rules)
			}
			for _, f := range res.Functions {
				if f.SelfShare.Significant {
					t.Errorf("seed %d, %d runs: %s %+v counted as real", seed, runs, f.Name, f.SelfShare)
				}
			}
		}
	}
}

func TestDoubledWorkFlagged(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	doubled := map[string]float64{"work_a": 50, "work_b": 60, "work_c": 20}
	for _, runs := range []int{1, 3} {
		res := Compare(inputs(rng, runs, 5000, split), inputs(rng, runs, 6500, doubled),
			mustRules(t, "self:work_b>+5pp", "self:work_a>+5pp", "self:work_*>+50%", "cpu>+10%"))
		if !res.Failed {
			t.Fatalf("%d runs: doubled work_b not flagged", runs)
		}
		want := []struct {
			passed bool
			broken string
		}{{false, "work_b"}, {true, ""}, {false, "work_b"}, {false, "cpu"}}
		for i, w := range want {
			r := res.Rules[i]
			if r.Passed != w.passed || (!w.passed && strings.Join(r.Broken, ",") != w.broken) {
				t.Errorf("%d runs: rule %s: passed %v broken %v, want %v %q", runs, r.Rule, r.Passed, r.Broken, w.passed, w.broken)
			}
		}
		var buf bytes.Buffer
		if err := WriteText(&buf, res, 10, func(s string) string { return s }); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if !strings.Contains(out, "FAIL self:work_b>+5pp: work_b") || !strings.Contains(out, "Regressions") {
			t.Errorf("text output lacks the failing rule:\n%s", out)
		}
		reg := out[strings.Index(out, "Regressions"):strings.Index(out, "Improvements")]
		if !strings.Contains(reg, "work_b") || strings.Contains(reg, "work_a") {
			t.Errorf("regressions should list work_b only:\n%s", reg)
		}
	}
}

// With several runs whose totals vary run to run, a CPU change inside that
// spread is noise.
func TestCPUWithinSpreadNotFlagged(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var base, next []Input
	for _, n := range []int{4000, 5000, 6000} {
		base = append(base, Input{Profile: sampled(rng, n, split)})
	}
	for _, n := range []int{4500, 5600, 6100} {
		next = append(next, Input{Profile: sampled(rng, n, split)})
	}
	res := Compare(base, next, mustRules(t, "cpu>+5%"))
	if res.Failed || res.CPU.Significant {
		t.Fatalf("CPU +%.1f%% within a 4000..6000-sample spread flagged: %+v", res.CPU.Pct, res.CPU)
	}
	if res.Rules[0].Noisy[0] != "cpu" {
		t.Errorf("rule should say the change was within noise: %+v", res.Rules[0])
	}
}

func TestParseRule(t *testing.T) {
	good := map[string]Rule{
		"self:main.hot>+5pp":               {kind: "self", pattern: "main.hot", limit: 5, points: true},
		"total:std::vector<int>::at>+2.5%": {kind: "total", pattern: "std::vector<int>::at", limit: 2.5},
		"cpu>+10%":                         {kind: "cpu", limit: 10},
		"self:operator>>+1pp":              {kind: "self", pattern: "operator>", limit: 1, points: true},
		"self:*>+0pp":                      {kind: "self", pattern: "*", limit: 0, points: true},
	}
	for s, want := range good {
		r, err := ParseRule(s)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		want.Text = s
		if r != want {
			t.Errorf("%s: got %+v, want %+v", s, r, want)
		}
	}
	for _, s := range []string{"", "self:f", "self:>+5pp", "cpu>+5pp", "wall:f>+5pp", "self:f>+5", "self:f>+-5pp", "self:f>+NaN%", "self:f>+inf%", "self:f>5pp"} {
		if _, err := ParseRule(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		ok   bool
	}{
		{"main.hot", "main.hot", true}, {"main.hot", "main.hotter", false},
		{"*", "anything", true}, {"work_*", "work_b", true}, {"*_b", "work_b", true},
		{"*or*", "work_b", true}, {"w*k*b", "work_b", true}, {"a*a", "a", false},
		{"operator[]", "operator[]", true}, {"std::*::at", "std::vector<int>::at", true},
	} {
		if got := report.Match(c.p, c.s); got != c.ok {
			t.Errorf("Match(%q, %q) = %v", c.p, c.s, got)
		}
	}
}

// With --by cpu, a function's share is of CPU time: time blocked, which
// samples count in a profile recorded off the CPU too, weighs nothing.
func TestCompareByCPU(t *testing.T) {
	mk := func(work, wait int) *profile.Profile {
		th := &profile.Thread{Tid: 1, Name: "t", Main: true}
		w := th.InternStack([]profile.Frame{{Label: "work"}, {Label: "main"}})
		b := th.InternStack([]profile.Frame{{Label: "[blocked]", Category: profile.CategoryIdle}, {Label: "main"}})
		for i := 0; i < work; i++ {
			th.Samples.Add(w, int64(i)*1e6, 1e6)
		}
		for i := 0; i < wait; i++ {
			th.Samples.Add(b, int64(work+i)*1e6, 0)
		}
		return &profile.Profile{Meta: profile.Meta{Interval: time.Millisecond, Categories: profile.OffCPUCategories},
			Processes: []*profile.Process{{Pid: 1, Name: "p", Threads: []*profile.Thread{th}}}}
	}
	base := []Input{{File: "a", Profile: mk(300, 700)}}
	next := []Input{{File: "b", Profile: mk(300, 1700)}}
	find := func(r Result, name string) Func {
		for _, f := range r.Functions {
			if f.Name == name {
				return f
			}
		}
		t.Fatalf("%s not in %+v", name, r.Functions)
		return Func{}
	}
	wall := Compare(base, next, nil)
	if f := find(wall, "work"); f.SelfShare.Base != 30 || f.SelfShare.New != 15 || f.SelfTime.Base != 300e6 {
		t.Errorf("by wall: work %+v", f)
	}
	cpu := CompareBy(base, next, nil, report.ByCPU)
	if f := find(cpu, "work"); f.SelfShare.Base != 100 || f.SelfShare.New != 100 || f.SelfShare.Significant || f.SelfTime.New != 300e6 {
		t.Errorf("by cpu: work %+v", f)
	}
	if cpu.By != report.ByCPU {
		t.Errorf("by %q", cpu.By)
	}
}

// A glob gates functions; [kernel] (time in the kernel, which follows the
// machine's load) only when a rule names it.
func TestGlobSkipsPseudoFrames(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	base := inputs(rng, 1, 5000, map[string]float64{"work_a": 50, "work_b": 30, "work_c": 20})
	more := map[string]float64{"work_a": 50, "work_b": 30, "work_c": 20, "work_d": 15}
	next := inputs(rng, 1, 5000, more)
	for _, in := range next {
		for _, pr := range in.Profile.Processes {
			for _, th := range pr.Threads {
				for i := range th.Frames.Frames {
					if th.Frames.Frames[i].Label == "work_d" {
						th.Frames.Frames[i].Label = "[kernel]"
					}
				}
			}
		}
	}
	res := Compare(base, next, mustRules(t, "self:*>+5pp", "self:[kernel]>+5pp"))
	if !res.Rules[0].Passed || res.Rules[1].Passed {
		t.Errorf("glob should skip [kernel], the exact rule catch it: %+v", res.Rules)
	}
}

// Time in the kernel without a kernel stack ([kernel]) grows and shrinks
// with the machine's load: of two recordings of one program in a CI run
// here, one had 20.7% of its samples in [kernel], the other 5.1%, which
// read as work_a's self share growing 9.7 points. Functions' self shares
// leave [kernel] out, so the gate does not see a change the program did
// not make.
func TestKernelShareDoesNotMoveFunctions(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	// sampled draws work_a to work_d; work_d becomes [kernel].
	kernel := func(in []Input) []Input {
		for _, in := range in {
			for _, pr := range in.Profile.Processes {
				for _, th := range pr.Threads {
					for i := range th.Frames.Frames {
						if th.Frames.Frames[i].Label == "work_d" {
							th.Frames.Frames[i].Label = profile.KernelLabel
						}
					}
				}
			}
		}
		return in
	}
	base := kernel(inputs(rng, 1, 5000, map[string]float64{"work_a": 50, "work_b": 30, "work_c": 20, "work_d": 25}))
	next := kernel(inputs(rng, 1, 5000, map[string]float64{"work_a": 50, "work_b": 30, "work_c": 20, "work_d": 5}))
	res := Compare(base, next, mustRules(t, "self:*>+5pp"))
	if !res.Rules[0].Passed {
		t.Errorf("the gate saw [kernel]'s shrinking as functions' growth: %+v", res.Rules)
	}
	seen := 0
	for _, f := range res.Functions {
		switch f.Name {
		case "work_a":
			if math.Abs(f.SelfShare.Base-50) > 3 || math.Abs(f.SelfShare.New-50) > 3 || f.SelfShare.Significant {
				t.Errorf("work_a self share %+v, want 50 on both sides", f.SelfShare)
			}
		case profile.KernelLabel:
			if math.Abs(f.SelfShare.Base-20) > 3 || math.Abs(f.SelfShare.New-4.8) > 2 || !f.SelfShare.Significant {
				t.Errorf("[kernel] self share %+v, want 20 -> 4.8 of all samples", f.SelfShare)
			}
		default:
			continue
		}
		seen++
	}
	if seen != 2 {
		t.Errorf("work_a or [kernel] missing from %+v", res.Functions)
	}
	// A real change still shows through the noise.
	slow := kernel(inputs(rng, 1, 5000, map[string]float64{"work_a": 50, "work_b": 60, "work_c": 20, "work_d": 25}))
	if res := Compare(next, slow, mustRules(t, "self:*>+5pp")); res.Rules[0].Passed || strings.Join(res.Rules[0].Broken, ",") != "work_b" {
		t.Errorf("work_b doubled beside more [kernel]: %+v", res.Rules)
	}
}

// A Python function's pseudo-library is bracketed once in the text (issue
// 29: jsoner  [[python]]), a binary's as before.
func TestWriteTextBracketsLibOnce(t *testing.T) {
	ch := Change{Base: 10, New: 20, Delta: 10, Significant: true}
	res := Result{Functions: []Func{
		{Name: "jsoner", Lib: report.PythonLib, SelfShare: ch, TotalShare: ch},
		{Name: "memcpy", Lib: "libc.so.6", SelfShare: ch, TotalShare: ch},
	}}
	var b strings.Builder
	if err := WriteText(&b, res, -1, func(s string) string { return s }); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "[[") || !strings.Contains(out, "jsoner  [python]") || !strings.Contains(out, "memcpy  [libc.so.6]") {
		t.Errorf("brackets:\n%s", out)
	}
}
