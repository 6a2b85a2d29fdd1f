//go:build linux

package e2e

// What a newcomer trips on (issue 29), each as it was hit: a Python
// program's first recordings, read with report, --tree and diff.

import (
	"encoding/json"
	"os/exec"
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

// leafSamples counts p's samples whose innermost frame is an address in a
// library for which in says so.
func leafSamples(p *profile.Profile, in func(*profile.Lib) bool) (n, all int64) {
	for _, pr := range p.Processes {
		for _, th := range pr.Threads {
			for _, s := range th.Samples.Stack {
				all++
				if s < 0 {
					continue
				}
				f := th.Frames.Frames[th.Stacks.Frame[s]]
				if l := profile.FindLib(pr.Libs, f.Address); f.Label == "" && l != nil && in(l) {
					n++
				}
			}
		}
	}
	return n, all
}

// rowsOf sums the self samples of the report's rows that match, and
// counts them.
func rowsOf(t *testing.T, path string, match func(name, lib string) bool) (rows int, self int64) {
	t.Helper()
	r := gprof(t, "report", "--json", "--top", "-1", path)
	var rep struct {
		All struct {
			TopSelf []struct {
				Name string `json:"name"`
				Lib  string `json:"lib"`
				Self int64  `json:"self_samples"`
			} `json:"top_self"`
		} `json:"all"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report --json: %v: %s", err, r.stderr)
	}
	for _, f := range rep.All.TopSelf {
		if match(f.Name, f.Lib) {
			rows++
			self += f.Self
		}
	}
	return rows, self
}

// node without flags: its JIT code was one row per instruction
// ("[anon]+0x7f...", 4 of the top 15 rows). It is one row, "[JIT] node",
// holding exactly the samples taken in anonymous memory, and the
// recording says once what would name it. With --perf-basic-prof the
// functions have their names, and nothing is said.
func TestNodeJITWithoutFlags(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (.ci/run installs nodejs)")
	}
	hot := repoPath("testdata", "node", "hot.js")
	rec := mustRecord(t, "--", node, hot, "0.5")
	t.Logf("stderr:\n%s", rec.stderr)
	if n := strings.Count(rec.stderr, "ran JIT code with no names"); n != 1 || !strings.Contains(rec.stderr, "shown as [JIT] node (pid ") ||
		!strings.Contains(rec.stderr, "node --perf-basic-prof names it") {
		t.Errorf("record says %d times that JIT code has no names; stderr %q", n, rec.stderr)
	}
	inAnon, all := leafSamples(rec.profile, func(l *profile.Lib) bool { return l.Name == "[anon]" })
	rows, self := rowsOf(t, rec.out, func(name, _ string) bool { return name == "[JIT] node" })
	addrRows, _ := rowsOf(t, rec.out, func(name, _ string) bool { return strings.HasPrefix(name, "[anon]+0x") })
	t.Logf("%d of %d samples in anonymous memory; [JIT] node: %d row, %d self samples; [anon]+0x rows: %d", inAnon, all, rows, self, addrRows)
	margin(t, "share of samples in JIT code, %", 100*float64(inAnon)/float64(all), 1)
	if inAnon*100 < all {
		t.Fatalf("only %d of %d samples ran JIT code: not the case at hand", inAnon, all)
	}
	if rows != 1 || self != inAnon || addrRows != 0 {
		t.Errorf("[JIT] node: %d rows with %d self samples, want 1 with the %d in anonymous memory; %d rows of bare addresses", rows, self, inAnon, addrRows)
	}

	named := mustRecord(t, "--", "sh", "-c", `cd "$1" && exec "$2" --perf-basic-prof "$3" 0.5`, "sh", t.TempDir(), node, hot)
	if strings.Contains(named.stderr, "ran JIT code") {
		t.Errorf("with --perf-basic-prof, record still says JIT code has no names: %q", named.stderr)
	}
	if rows, self := rowsOf(t, named.out, func(name, _ string) bool { return strings.HasPrefix(name, "JS:*work ") }); rows == 0 || self == 0 {
		t.Errorf("with --perf-basic-prof, work has no row of its own")
	}
}

// A stripped library's code that no exported symbol covers (libcrypto's
// SHA-256) is one row per function, named after its start, not one per
// address (issue 29: libcrypto's top 15 rows were all
// libcrypto.so.3+0x29c...). The library's figures do not change: its rows
// hold exactly the samples taken in it.
func TestStrippedLibraryByFunction(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed")
	}
	rec := mustRecord(t, "-q", "--", "openssl", "speed", "-seconds", "1", "-bytes", "16384", "sha256")
	isCrypto := func(lib string) bool { return strings.HasPrefix(lib, "libcrypto.so") }
	inLib, all := leafSamples(rec.profile, func(l *profile.Lib) bool { return isCrypto(l.Name) })
	if inLib*2 < all {
		t.Skipf("only %d of %d samples in libcrypto: not the case at hand", inLib, all)
	}
	rows, self := rowsOf(t, rec.out, func(_, lib string) bool { return isCrypto(lib) })
	addrRows, addrSelf := rowsOf(t, rec.out, func(name, lib string) bool { return isCrypto(lib) && strings.Contains(name, "+0x") })
	subRows, subSelf := rowsOf(t, rec.out, func(name, lib string) bool { return isCrypto(lib) && strings.HasPrefix(name, "sub_") })
	t.Logf("libcrypto: %d of %d samples; %d rows with %d; %d sub_ rows with %d; %d address rows with %d", inLib, all, rows, self, subRows, subSelf, addrRows, addrSelf)
	margin(t, "share of libcrypto's samples in unnamed functions, %", 100*float64(subSelf)/float64(inLib), 50)
	if self != inLib {
		t.Errorf("libcrypto's rows hold %d self samples, want the %d taken in it", self, inLib)
	}
	if subSelf*2 < inLib || addrSelf*100 > inLib {
		t.Errorf("unnamed code: %d samples in sub_ functions and %d in bare addresses, of %d", subSelf, addrSelf, inLib)
	}
}
