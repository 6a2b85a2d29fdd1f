//go:build linux

package e2e

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// pprofTop runs `go tool pprof -top` and returns flat% by function name.
// pprof lists a function's samples where it was inlined apart, as "NAME
// (inline)"; gprof's report, like the Firefox Profiler, counts a function
// once whether or not it was inlined, so the two rows are added up.
func pprofTop(t *testing.T, file string, extra ...string) map[string]float64 {
	t.Helper()
	out, err := exec.Command("go", append(append([]string{"tool", "pprof", "-top"}, extra...), file)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	row := regexp.MustCompile(`^\s*\S+\s+([\d.]+)%\s+[\d.]+%\s+\S+\s+[\d.]+%\s+(.+)$`)
	flat := map[string]float64{}
	for _, l := range strings.Split(string(out), "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			flat[strings.TrimSuffix(strings.TrimSpace(m[2]), " (inline)")] += v
		}
	}
	if len(flat) == 0 {
		t.Fatalf("no rows in go tool pprof -top output:\n%s", out)
	}
	return flat
}

// TestPprofOutAgreesWithReport: a gprof recording written as pprof gives
// go tool pprof the same top functions, with the same shares, as report.
func TestPprofOutAgreesWithReport(t *testing.T) {
	bin := buildC(t, "split")
	dir := t.TempDir()
	rec := filepath.Join(dir, "p.json.gz")
	mustRecord(t, "-q", "-o", rec, "--", bin, "2", "1")
	pb := filepath.Join(dir, "p.pb.gz")
	if r := gprof(t, "convert", "--to", "pprof", rec, "-o", pb); r.code != 0 {
		t.Fatalf("convert --to pprof: exit %d: %s", r.code, r.stderr)
	}
	rep := runReport(t, rec)
	for _, idx := range []string{"samples", "cpu"} {
		flat := pprofTop(t, pb, "-sample_index="+idx)
		for _, name := range []string{"work_a", "work_b", "work_c"} {
			f, ok := findFunc(rep.All.TopSelf, name)
			if !ok {
				t.Fatalf("%s not in report", name)
			}
			if got := flat[name]; got < f.SelfPct-0.05 || got > f.SelfPct+0.05 {
				t.Errorf("%s: go tool pprof (%s) says %.2f%%, report %.2f%%", name, idx, got, f.SelfPct)
			}
		}
	}
	// And back: pprof read in again gives the same shares.
	if r := gprof(t, "convert", pb, "-o", filepath.Join(dir, "back.json.gz")); r.code != 0 {
		t.Fatalf("convert of pprof: exit %d: %s", r.code, r.stderr)
	}
	back := runReport(t, filepath.Join(dir, "back.json.gz"))
	for _, name := range []string{"work_a", "work_b", "work_c"} {
		a, _ := findFunc(rep.All.TopSelf, name)
		b, ok := findFunc(back.All.TopSelf, name)
		if !ok || b.SelfPct != a.SelfPct {
			t.Errorf("%s after a pprof round trip: %.2f%%, want %.2f%%", name, b.SelfPct, a.SelfPct)
		}
	}
}

// TestGoPprofConverts: Go's own runtime/pprof CPU profile converts with
// its function names, and report agrees with go tool pprof on it.
func TestGoPprofConverts(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "gopprof")
	if out, err := rootCommand("go", "build", "-o", bin, "./testdata/gopprof").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	prof := filepath.Join(dir, "cpu.pprof")
	if out, err := exec.Command(bin, prof).CombinedOutput(); err != nil {
		t.Fatalf("gopprof: %v\n%s", err, out)
	}
	for _, to := range []string{"processed", "gecko"} {
		out := filepath.Join(dir, to+".json.gz")
		if r := gprof(t, "convert", "--to", to, prof, "-o", out); r.code != 0 {
			t.Fatalf("convert --to %s: exit %d: %s", to, r.code, r.stderr)
		}
		rep := runReport(t, out)
		flat := pprofTop(t, prof, "-sample_index=samples")
		for name, pct := range flat {
			if pct == 0 {
				continue
			}
			f, ok := findFunc(rep.All.TopSelf, name)
			if !ok || f.SelfPct < pct-0.1 || f.SelfPct > pct+0.1 {
				t.Errorf("%s: %s self %.2f%% (found %v), go tool pprof %.2f%%", to, name, f.SelfPct, ok, pct)
			}
		}
		for _, name := range []string{"main.spin", "main.hot", "main.warm", "main.main"} {
			if _, ok := findFunc(rep.All.TopTotal, name); !ok {
				t.Errorf("%s: %s missing from the converted Go profile", to, name)
			}
		}
	}
}
