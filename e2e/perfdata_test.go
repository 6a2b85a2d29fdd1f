//go:build linux

package e2e

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/format"
)

// perfReportSelf returns each symbol's self share (percent of samples or
// period) as 'perf report' computes it.
func perfReportSelf(t *testing.T, file string) map[string]float64 {
	t.Helper()
	b, err := exec.Command("perf", "report", "-i", file, "--stdio", "--no-children", "--sort", "symbol", "-g", "none", "--percent-limit", "0").Output()
	if err != nil {
		t.Fatalf("perf report: %v", err)
	}
	top := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		pct, rest, ok := strings.Cut(line, "%")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(pct, 64)
		if err != nil {
			continue
		}
		// "  48.12%  [.] work_a      -   -": the name follows the
		// privilege mark, then padding and perf's IPC columns.
		_, sym, ok := strings.Cut(rest, "] ")
		if !ok {
			continue
		}
		sym, _, _ = strings.Cut(strings.TrimSpace(sym), "  ")
		top[sym] += v
	}
	if len(top) == 0 {
		t.Fatalf("perf report printed no symbols:\n%s", b)
	}
	return top
}

// checkAgainstPerf converts file with gprof and compares the n functions
// with the most self time with perf report's on the same file.
func checkAgainstPerf(t *testing.T, file string, n int, want ...string) reportJSON {
	t.Helper()
	perf := perfReportSelf(t, file)
	rep := runReport(t, file)
	if len(rep.All.TopSelf) == 0 {
		t.Fatal("gprof report lists no functions")
	}
	for _, w := range want {
		if _, ok := perf[w]; !ok {
			t.Errorf("perf report does not list %s: %v", w, perf)
		}
	}
	for i, f := range rep.All.TopSelf {
		if i == n {
			break
		}
		p, ok := perf[f.Name]
		if !ok {
			t.Errorf("gprof's #%d function %s (%.2f%%) is not in perf report: %v", i+1, f.Name, f.SelfPct, perf)
			continue
		}
		if math.Abs(p-f.SelfPct) > 1 {
			t.Errorf("%s: gprof %.2f%%, perf report %.2f%%", f.Name, f.SelfPct, p)
		}
	}
	for _, w := range want {
		if f, ok := findFunc(rep.All.TopSelf, w); !ok || math.Abs(f.SelfPct-perf[w]) > 1 {
			t.Errorf("%s: gprof %.2f%% (listed %v), perf report %.2f%%", w, f.SelfPct, ok, perf[w])
		}
	}
	// The converted file loads, with names, in the processed format.
	out := filepath.Join(t.TempDir(), "processed.json.gz")
	if r := gprof(t, "convert", file, "-o", out); r.code != 0 {
		t.Fatalf("gprof convert: exit %d: %s", r.code, r.stderr)
	}
	if _, k, err := format.File(out); err != nil || k != format.Processed {
		t.Fatalf("converted file: kind %q, %v", k, err)
	}
	return rep
}

func buildSplitAs(t *testing.T, name string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed (.ci/run installs it)")
	}
	out := filepath.Join(t.TempDir(), name)
	args := append([]string{"-O2", "-g", "-pthread", "-o", out, filepath.Join("testdata", "split.c")}, flags...)
	if b, err := rootCommand("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return out
}

// TestPerfDataFramePointers converts a 'perf record -g' file of the split
// program and gets perf report's shares, even after the binary is rebuilt:
// the file's build-ids lead to the copy in perf's build-id cache.
func TestPerfDataFramePointers(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir) // perf keeps its build-id cache in ~/.debug
	bin := buildSplitAs(t, "split", "-fno-omit-frame-pointer")
	data := filepath.Join(dir, "fp.data")
	perfRecord(t, data, "-g", "-F", "2000", bin, "2", "1")
	rep := checkAgainstPerf(t, data, 3, "work_a", "work_b", "work_c")
	if f, ok := findFunc(rep.All.TopTotal, "start_thread"); !ok || f.TotalPct < 90 {
		t.Errorf("start_thread total %.1f%% (listed %v), want the workers' stacks to reach it", f.TotalPct, ok)
	}

	// Rebuild the binary at the same path with its functions elsewhere:
	// names must still come from the recorded build.
	if b, err := rootCommand("gcc", "-O0", "-g", "-pthread", "-DB_UNITS=7", "-o", bin, filepath.Join("testdata", "split.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	again := runReport(t, data)
	for _, name := range []string{"work_a", "work_b", "work_c"} {
		a, _ := findFunc(rep.All.TopSelf, name)
		b, ok := findFunc(again.All.TopSelf, name)
		if !ok || math.Abs(a.SelfPct-b.SelfPct) > 0.01 {
			t.Errorf("after the rebuild %s is %.2f%% (listed %v), was %.2f%%", name, b.SelfPct, ok, a.SelfPct)
		}
	}
}

// TestPerfDataDwarf converts a '--call-graph dwarf' file: gprof unwinds the
// copied stacks itself, through code without frame pointers.
func TestPerfDataDwarf(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir) // perf keeps its build-id cache in ~/.debug
	bin := buildSplitAs(t, "split", "-fomit-frame-pointer")
	data := filepath.Join(dir, "dwarf.data")
	perfRecord(t, data, "--call-graph", "dwarf,16384", "-F", "1000", bin, "2", "1")
	rep := checkAgainstPerf(t, data, 3, "work_a", "work_b", "work_c")
	for _, name := range []string{"run", "start_thread"} {
		if f, ok := findFunc(rep.All.TopTotal, name); !ok || f.TotalPct < 90 {
			t.Errorf("%s total %.1f%% (listed %v), want the unwound stacks to reach it", name, f.TotalPct, ok)
		}
	}
}

// TestPerfDataSystemBinary converts perl's recordings, fp and dwarf, and
// the dwarf stacks reach main and _start through the distribution's
// binaries.
func TestPerfDataSystemBinary(t *testing.T) {
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("perl is not installed")
	}
	dir := t.TempDir()
	t.Setenv("HOME", dir) // perf keeps its build-id cache in ~/.debug
	script := `my $s = 0; for my $i (1..2500000) { $s += $i * 2 % 7 } print "$s\n"`
	for _, mode := range [][]string{{"-g"}, {"--call-graph", "dwarf"}} {
		t.Run(mode[len(mode)-1], func(t *testing.T) {
			data := filepath.Join(dir, mode[len(mode)-1]+".data")
			perfRecord(t, data, append(mode, "-F", "2000", perl, "-e", script)...)
			rep := checkAgainstPerf(t, data, 5)
			if mode[0] == "-g" {
				return
			}
			for _, name := range []string{"main", "_start"} {
				if f, ok := findFunc(rep.All.TopTotal, name); !ok || f.TotalPct < 90 {
					t.Errorf("%s total %.1f%% (listed %v), want dwarf stacks to reach it", name, f.TotalPct, ok)
				}
			}
		})
	}
}

// TestPerfDataPipe converts what 'perf record -o -' streams.
func TestPerfDataPipe(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir) // perf keeps its build-id cache in ~/.debug
	bin := buildSplitAs(t, "split", "-fno-omit-frame-pointer")
	data := filepath.Join(dir, "pipe.data")
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed (apt-get install linux-perf)")
	}
	f, err := os.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("perf", "record", "-q", "-g", "-F", "2000", "-o", "-", bin, "1", "1")
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = f, &stderr
	err = cmd.Run()
	f.Close()
	if err != nil {
		t.Skipf("perf record -o - failed: %v: %s", err, firstLine(stderr.String()))
	}
	checkAgainstPerf(t, data, 3, "work_a", "work_b", "work_c")
}

// TestPerfDataErrors: a damaged file is a one-line error, not a crash.
func TestPerfDataErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"short.data":     "PERFILE2",
		"header.data":    "PERFILE2\x68\x00\x00\x00\x00\x00\x00\x00" + strings.Repeat("\xff", 60),
		"truncated.data": "PERFILE2\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		r := gprof(t, "convert", path, "-o", filepath.Join(dir, "out.json.gz"))
		if r.code != 1 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "perf.data") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line about perf.data", name, r.code, r.stderr)
		}
	}
}
