//go:build linux

package e2e

// What a newcomer trips on (issue 29), each as it was hit: a Python
// program's first recordings, read with report, --tree and diff.

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// threesScript is testdata/python/threes.py: hasher, jsoner and spinner
// in three threads.
func threesScript() string { return repoPath("testdata", "python", "threes.py") }

// python312 is pyenv's CPython 3.12, the one the issue was found with.
func python312(t *testing.T) string {
	t.Helper()
	py, ok := pythons(t)["3.12"]
	if !ok {
		t.Skip("no CPython 3.12 in pyenv")
	}
	return py
}

// A Python recording without --off-cpu is a CPU profile: its lists are
// headed CPU time, report --json says off_cpu false, and so it stays
// through a conversion. Its categories include Idle (the Python ones
// do), which the report once took for off-CPU samples. With --off-cpu the
// same program's lists are wall-clock time. The call tree brackets
// [python] once.
func TestPythonRecordingIsCPUTime(t *testing.T) {
	py := python312(t)
	for _, off := range []bool{false, true} {
		args := []string{"--", py, threesScript(), "0.3"}
		if off {
			args = append([]string{"--off-cpu"}, args...)
		}
		rec := mustRecord(t, args...)
		if got := rec.profile.Meta.Extra[profile.ExtraOffCPU]; got != map[bool]string{false: "false", true: "true"}[off] {
			t.Errorf("off-cpu %v: the profile says %s=%q", off, profile.ExtraOffCPU, got)
		}
		processed := filepath.Join(t.TempDir(), "processed.json.gz")
		if r := gprof(t, "convert", rec.out, "-o", processed); r.code != 0 {
			t.Fatalf("convert: %s", r.stderr)
		}
		for _, path := range []string{rec.out, processed} {
			r := gprof(t, "report", "--json", path)
			var rep struct {
				OffCPU bool `json:"off_cpu"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
				t.Fatalf("report --json %s: exit %d, %v: %s", path, r.code, err, r.stderr)
			}
			if rep.OffCPU != off {
				t.Errorf("off-cpu %v: report --json %s says off_cpu %v", off, filepath.Base(path), rep.OffCPU)
			}
			text := gprof(t, "report", path).stdout
			want, wrong := "Top by self CPU time", "wall-clock"
			if off {
				want, wrong = "Top by self wall-clock time", "Top by self CPU time"
			}
			if !strings.Contains(text, want) || strings.Contains(text, wrong) {
				t.Errorf("off-cpu %v: report of %s is not headed %q:\n%s", off, filepath.Base(path), want, text)
			}
		}
		tree := gprof(t, "report", "--tree", rec.out).stdout
		if !strings.Contains(tree, "jsoner  [python]") || strings.Contains(tree, "[[") {
			t.Errorf("report --tree does not bracket [python] once:\n%s", tree)
		}
	}
}

// A diff rule says what it measured, and the function it broke is listed
// where the rule looked: issue 29's 'total:jsoner>+5pp' failed on jsoner's
// total share while the text listed jsoner under Improvements by its self
// share. Here the new program runs jsoner on a bigger object (more of its
// time in json's C code, so its own self share shrinks) and its other
// threads a fifth as long (so its total share grows).
func TestDiffRuleListsWhereItLooks(t *testing.T) {
	py := python312(t)
	base := mustRecord(t, "--", py, threesScript(), "0.5")
	next := mustRecord(t, "--", py, threesScript(), "0.5", "new")
	r := gprof(t, "diff", "--top", "-1", "--fail-if", "total:jsoner>+5pp", base.out, next.out)
	t.Logf("gprof diff:\n%s", r.stdout)
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (the rule broken): %s", r.code, r.stderr)
	}
	reg, rest, _ := strings.Cut(r.stdout, "Improvements")
	imp, rules, _ := strings.Cut(rest, "Rules:")
	if !strings.Contains(reg, "jsoner  [python]  ← breaks total:jsoner>+5pp") {
		t.Errorf("jsoner is not listed under Regressions as the rule's")
	}
	if strings.Contains(imp, " jsoner  [python]") {
		t.Errorf("jsoner is listed under Improvements")
	}
	if !strings.Contains(rules, "FAIL total:jsoner>+5pp: jsoner total share +") {
		t.Errorf("the rule's line does not show jsoner's total share")
	}
	js := gprof(t, "diff", "--json", "--fail-if", "total:jsoner>+5pp", base.out, next.out)
	var res struct {
		Functions []struct {
			Name  string `json:"name"`
			Total struct {
				Delta, Noise float64
			} `json:"total_pct"`
		} `json:"functions"`
		Rules []struct {
			Broken  []string `json:"broken"`
			Measure string   `json:"measure"`
			Changes []struct {
				Name    string `json:"name"`
				Verdict string `json:"verdict"`
				Change  struct {
					Delta float64 `json:"delta"`
				} `json:"change"`
			} `json:"changes"`
		} `json:"rules"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &res); err != nil || js.code != 3 {
		t.Fatalf("diff --json: exit %d, %v", js.code, err)
	}
	rule := res.Rules[0]
	if rule.Measure != "total_pct" || len(rule.Changes) != 1 || rule.Changes[0].Name != "jsoner" || rule.Changes[0].Verdict != "broken" || len(rule.Broken) != 1 {
		t.Errorf("rules[0] %+v", rule)
	}
	for _, f := range res.Functions {
		if f.Name == "jsoner" {
			margin(t, "jsoner's total share change over 3 noise", f.Total.Delta/(3*f.Total.Noise), 1)
			if len(rule.Changes) > 0 && f.Total.Delta != rule.Changes[0].Change.Delta {
				t.Errorf("the rule's change %v is not jsoner's total %v", rule.Changes[0].Change.Delta, f.Total.Delta)
			}
		}
	}
}
