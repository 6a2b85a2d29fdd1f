package diff

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/profile"
)

// stacks makes a one-thread profile with n samples of each stack, given
// innermost frame first, separated by ";" ("json_c;jsoner;main").
func stacks(n map[string]int) *profile.Profile {
	th := &profile.Thread{Tid: 1, Name: "python3", Main: true}
	i := 0
	for st, count := range n {
		var frames []profile.Frame
		for _, f := range strings.Split(st, ";") {
			frames = append(frames, profile.Frame{Label: f})
		}
		s := th.InternStack(frames)
		for range count {
			th.Samples.Add(s, int64(i)*int64(time.Millisecond), int64(time.Millisecond))
			i++
		}
	}
	return &profile.Profile{
		Meta:      profile.Meta{Interval: time.Millisecond},
		Processes: []*profile.Process{{Pid: 1, Name: "python3", Threads: []*profile.Thread{th}}},
	}
}

// Issue 29: 'total:jsoner>+5pp' failed on jsoner's total share while the
// text listed jsoner under Improvements, by a self change within the
// noise. A rule's verdict now comes with the measure it judged, in the
// text and in JSON, and a function a rule broke is listed under
// Regressions, with eval, whose own self share shrank for real while its
// total grew.
func TestRuleShowsItsMeasure(t *testing.T) {
	base := stacks(map[string]int{"jsoner;eval;main": 60, "json_c;jsoner;eval;main": 140, "eval;main": 300, "spinner;main": 500})
	next := stacks(map[string]int{"jsoner;eval;main": 50, "json_c;jsoner;eval;main": 350, "eval;main": 200, "spinner;main": 400})
	res := Compare([]Input{{"base", base}}, []Input{{"new", next}}, mustRules(t, "total:jsoner>+5pp", "total:eval>+5pp", "self:spinner>+5pp", "cpu>+50%"))
	if !res.Failed {
		t.Fatalf("rules passed: %+v", res.Rules)
	}
	jsoner := find(t, res, "jsoner")
	if jsoner.SelfShare.Significant || jsoner.SelfShare.Delta >= 0 || !jsoner.TotalShare.Significant {
		t.Fatalf("fixture: jsoner %+v", jsoner)
	}
	want := []struct {
		measure string
		changes []RuleChange
	}{
		{"total_pct", []RuleChange{{Name: "jsoner", Change: jsoner.TotalShare, Verdict: "broken"}}},
		{"total_pct", []RuleChange{{Name: "eval", Change: find(t, res, "eval").TotalShare, Verdict: "broken"}}},
		// A rule that names one function shows it when it passes too.
		{"self_pct", []RuleChange{{Name: "spinner", Change: find(t, res, "spinner").SelfShare, Verdict: "ok"}}},
		{"cpu_ns", []RuleChange{{Name: "cpu", Change: res.CPU, Verdict: "ok"}}},
	}
	for i, r := range res.Rules {
		if r.Measure != want[i].measure || len(r.Changes) != len(want[i].changes) || r.Changes[0] != want[i].changes[0] {
			t.Errorf("rule %s: measure %q, changes %+v; want %q, %+v", r.Rule, r.Measure, r.Changes, want[i].measure, want[i].changes)
		}
	}

	var text bytes.Buffer
	if err := WriteText(&text, res, 20, func(s string) string { return s }); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	t.Logf("\n%s", out)
	reg, rest, _ := strings.Cut(out, "Improvements")
	imp, _, _ := strings.Cut(rest, "Threads by name")
	for _, fn := range []string{"jsoner", "eval"} {
		if !strings.Contains(reg, "  "+fn+"\n") && !strings.Contains(reg, "  "+fn+"  ") {
			t.Errorf("%s, broken by a total rule, is not under Regressions", fn)
		}
		if strings.Contains(imp, "  "+fn) {
			t.Errorf("%s, broken by a total rule, is listed under Improvements", fn)
		}
	}
	for _, line := range []string{
		"FAIL total:jsoner>+5pp: jsoner total share +20.0 pp (20.0→40.0)",
		"ok   self:spinner>+5pp: spinner self share -10.0 pp (50.0→40.0)",
		"ok   cpu>+50%: CPU time +0.0%",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("no %q in the rules", line)
		}
	}

	// JSON keeps every field it had and adds the measure.
	var js bytes.Buffer
	if err := WriteJSON(&js, res); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rules []map[string]json.RawMessage `json:"rules"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"rule", "passed", "broken", "within_noise", "matched", "measure", "changes"} {
		if _, ok := doc.Rules[0][k]; !ok {
			t.Errorf("rules[0] has no %q: %s", k, js.String())
		}
	}
}

func find(t *testing.T, r Result, name string) Func {
	t.Helper()
	for _, f := range r.Functions {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("%s not in the result", name)
	return Func{}
}
