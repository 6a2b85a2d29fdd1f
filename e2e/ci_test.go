//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDiffGate is the CI gate end to end: two recordings of one program
// agree, and a build where work_b does twice the work is flagged with
// work_b named and exit code 3.
func TestDiffGate(t *testing.T) {
	base := buildC(t, "split")
	slow := filepath.Join(fixtures, "split-slow-b")
	if b, err := rootCommand("gcc", "-O2", "-g", "-pthread", "-DB_UNITS=6", "-o", slow, filepath.Join("testdata", "split.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	dir := t.TempDir()
	rec := func(name, bin string) string {
		out := filepath.Join(dir, name+".json.gz")
		// 4 kHz: the shares checked below are within a point or two.
		mustRecord(t, "-q", "-r", "4000", "-o", out, "--", bin, "1", "1")
		return out
	}
	b1, b2, n := rec("base1", base), rec("base2", base), rec("slow", slow)

	same := gprof(t, "diff", "--fail-if", "self:*>+5pp", "--fail-if", "total:work_*>+5pp", b1, b2)
	if same.code != 0 {
		t.Fatalf("two recordings of one program: exit %d\n%s%s", same.code, same.stdout, same.stderr)
	}

	r := gprof(t, "diff", "--json", "--fail-if", "self:*>+5pp", b1, n)
	if r.code != 3 {
		t.Fatalf("doubled work_b: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	var res struct {
		Version int `json:"version"`
		Base    struct {
			Samples []int64 `json:"samples"`
		} `json:"base"`
		New struct {
			Samples []int64 `json:"samples"`
		} `json:"new"`
		Rules []struct {
			Passed bool     `json:"passed"`
			Broken []string `json:"broken"`
		} `json:"rules"`
		Functions []struct {
			Name  string `json:"name"`
			Total struct {
				Base, New, Delta float64
				Significant      bool
			} `json:"total_pct"`
		} `json:"functions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("diff --json: %v\n%s", err, r.stdout)
	}
	if res.Version != 1 || len(res.Rules) != 1 || res.Rules[0].Passed || strings.Join(res.Rules[0].Broken, ",") != "work_b" {
		t.Fatalf("want the rule broken by work_b alone: %+v", res.Rules)
	}
	if len(res.Base.Samples) != 1 || len(res.New.Samples) != 1 {
		t.Fatalf("sides' samples %v and %v, want one run each", res.Base.Samples, res.New.Samples)
	}
	// Truth: work_b goes from 3 of 10 units (30%) to 6 of 13 (46.2%) of
	// the CPU time; its total share counts the kernel time on top of it.
	// A share p of N samples varies by sqrt(p(1-p)/N): 1.6 points for
	// 1000 samples at 46%, 0.8 for 4000. Allow four of those and a point.
	tol := func(p float64, n int64) float64 { return 100*4*math.Sqrt(p*(1-p)/float64(n)) + 1 }
	for _, f := range res.Functions {
		if f.Name != "work_b" {
			continue
		}
		tb, tn := tol(0.3, res.Base.Samples[0]), tol(0.462, res.New.Samples[0])
		margin(t, fmt.Sprintf("work_b base total %% (±%.1f)", tb), f.Total.Base, 30)
		margin(t, fmt.Sprintf("work_b new total %% (±%.1f)", tn), f.Total.New, 46.2)
		if math.Abs(f.Total.Base-30) > tb || math.Abs(f.Total.New-46.2) > tn {
			t.Errorf("work_b total share %.1f -> %.1f, want 30 ± %.1f -> 46.2 ± %.1f", f.Total.Base, f.Total.New, tb, tn)
		}
	}
	text := gprof(t, "diff", "--fail-if", "self:work_b>+5pp", b1, n)
	if text.code != 3 || !strings.Contains(text.stdout, "FAIL self:work_b>+5pp: work_b") {
		t.Errorf("text output: exit %d\n%s", text.code, text.stdout)
	}
}

// TestReportViews: collapsed stacks sum to the report's sample count, and
// filters, the call tree and -o work on a real recording.
func TestReportViews(t *testing.T) {
	bin := buildC(t, "split")
	dir := t.TempDir()
	rec := filepath.Join(dir, "p.json.gz")
	mustRecord(t, "-q", "-o", rec, "--", bin, "2", "0.5")
	rep := runReport(t, rec)
	folded := filepath.Join(dir, "p.folded")
	if r := gprof(t, "report", "--format", "collapsed", "-o", folded, rec); r.code != 0 {
		t.Fatalf("collapsed: exit %d: %s", r.code, r.stderr)
	}
	data, err := os.ReadFile(folded)
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^(\S[^\n]*) (\d+)$`)
	var sum int64
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("not a folded line: %q", l)
		}
		n, _ := strconv.ParseInt(m[2], 10, 64)
		sum += n
	}
	if sum != rep.Samples {
		t.Errorf("folded stacks sum to %d, report says %d samples", sum, rep.Samples)
	}
	if !strings.Contains(string(data), ";run;work_a ") {
		t.Errorf("no run;work_a path in:\n%s", data)
	}
	// One worker thread by tid: its samples only.
	var tid string
	var all struct {
		Threads []struct {
			Tid     int   `json:"tid"`
			Main    bool  `json:"main"`
			Samples int64 `json:"samples"`
		} `json:"threads"`
	}
	json.Unmarshal([]byte(gprof(t, "report", "--json", rec).stdout), &all)
	for _, th := range all.Threads {
		if th.Samples > 0 && !th.Main {
			tid = strconv.Itoa(th.Tid)
			break
		}
	}
	one := gprof(t, "report", "--json", "--tid", tid, rec)
	var oneRep struct {
		Threads []struct {
			Tid int `json:"tid"`
		} `json:"threads"`
	}
	if err := json.Unmarshal([]byte(one.stdout), &oneRep); err != nil || len(oneRep.Threads) != 1 || oneRep.Threads[0].Tid != atoi(tid) {
		t.Errorf("--tid %s: %v %+v", tid, err, oneRep.Threads)
	}
	tree := gprof(t, "report", "--tree", "--depth", "3", "--thread", "split", rec)
	if tree.code != 0 || !strings.Contains(tree.stdout, "start_thread") || strings.Contains(tree.stdout, "work_a") {
		t.Errorf("--tree --depth 3: exit %d\n%s%s", tree.code, tree.stdout, tree.stderr)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
