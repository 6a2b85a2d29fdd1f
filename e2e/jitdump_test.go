//go:build linux

package e2e

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// python313 finds CPython 3.13 or later, whose -X perf_jit writes a
// jitdump: on PATH, or in pyenv's versions.
func python313(t *testing.T) string {
	t.Helper()
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		home, _ := os.UserHomeDir()
		root = filepath.Join(home, ".pyenv")
	}
	for _, g := range []string{"3.14*/bin/python3.14", "3.13*/bin/python3.13"} {
		if m, _ := filepath.Glob(filepath.Join(root, "versions", g)); len(m) > 0 {
			return m[len(m)-1]
		}
	}
	for _, name := range []string{"python3.14", "python3.13"} {
		// pyenv's shims on PATH run a version only where it is selected.
		if p, err := exec.LookPath(name); err == nil && !strings.Contains(p, "/shims/") {
			return p
		}
	}
	t.Skip("no CPython 3.13 or later (python3.13 on PATH or in pyenv)")
	return ""
}

// pyJITScript spends its time in inner(), called from outer(): with
// -X perf_jit each Python function runs through a trampoline of its own
// that the jitdump names (py::inner:FILE) and gives the CFI of.
const pyJITScript = `def inner(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s

def outer():
    t = 0
    for _ in range(%d):
        t += inner(100000)
    return t

print(outer())
`

func writePyJIT(t *testing.T, loops int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jitprog.py")
	if err := os.WriteFile(path, []byte(strings.Replace(pyJITScript, "%d", strconv.Itoa(loops), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// removeJITDumps deletes the dumps the processes of p left in /tmp.
func removeJITDumps(p *profile.Profile) {
	for _, pr := range p.Processes {
		os.Remove(filepath.Join(os.TempDir(), "jit-"+strconv.Itoa(pr.Pid)+".dump"))
	}
}

// TestJITDumpPython: a live recording of CPython 3.13 -X perf_jit names
// its Python functions from the jitdump (py::inner:FILE), where without it
// they are JIT code without names ([JIT] python3.13).
func TestJITDumpPython(t *testing.T) {
	py := python313(t)
	script := writePyJIT(t, 40)
	p := mustRecord(t, "-q", "--", py, "-X", "perf_jit", script).profile
	defer removeJITDumps(p)
	rep := runReport(t, writeTemp(t, p))
	inner, ok := findFunc(rep.All.TopTotal, "py::inner:"+script)
	margin(t, "py::inner total %", inner.TotalPct, 50)
	if !ok || inner.TotalPct < 50 {
		t.Errorf("py::inner:%s has %.1f%% total (listed %v), want most of the samples; top: %v", script, inner.TotalPct, ok, rep.All.TopTotal[:min(10, len(rep.All.TopTotal))])
	}
	for _, f := range rep.All.TopTotal {
		// Unnamed JIT code is a bare address, or its region ("[JIT]
		// python3.13").
		if (strings.HasPrefix(f.Name, "[anon]") || strings.HasPrefix(f.Name, "[JIT] ")) && f.TotalPct >= 1 {
			t.Errorf("%s is unnamed in %.1f%% of samples", f.Name, f.TotalPct)
		}
	}
}

// TestJITDumpPerfData: perf.data of 'perf record -k 1 --call-graph dwarf'
// of the same program reads with the jitdump's names, and its stacks are
// unwound through the trampolines by the CFI the dump gives (CPython
// keeps no frame pointers): outer() is a caller of inner() in the stacks.
// perf itself needs 'perf inject --jit' for names; its self shares are
// the peer's.
func TestJITDumpPerfData(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("checked on x86-64")
	}
	py := python313(t)
	script := writePyJIT(t, 40)
	dir := t.TempDir()
	t.Setenv("HOME", dir) // perf keeps its build-id cache, and perf inject its .so files, in ~/.debug
	data := filepath.Join(dir, "perf.data")
	perfRecord(t, data, "-k", "1", "--call-graph", "dwarf", "-F", "999", py, "-X", "perf_jit", script)
	// CPython leaves its dump in /tmp, and perf inject an ELF file per
	// trampoline beside it (jitted-PID-N.so): this run's are removed.
	defer func() {
		m, _ := filepath.Glob(filepath.Join(os.TempDir(), "jit-*.dump"))
		for _, f := range m {
			if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), script) {
				pid := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "jit-"), ".dump")
				so, _ := filepath.Glob(filepath.Join(os.TempDir(), "jitted-"+pid+"-*.so"))
				for _, x := range append(so, f) {
					os.Remove(x)
				}
			}
		}
	}()
	rep := runReport(t, data)
	inner, ok := findFunc(rep.All.TopTotal, "py::inner:"+script)
	outer, ok2 := findFunc(rep.All.TopTotal, "py::outer:"+script)
	margin(t, "py::inner total %", inner.TotalPct, 50)
	if !ok || inner.TotalPct < 50 {
		t.Fatalf("py::inner has %.1f%% total (listed %v); top: %v", inner.TotalPct, ok, rep.All.TopTotal[:min(10, len(rep.All.TopTotal))])
	}
	// Every sample in inner has outer below it, once unwound through
	// inner's trampoline.
	margin(t, "py::outer total % - py::inner total %", outer.TotalPct-inner.TotalPct, -1)
	if !ok2 || outer.TotalPct < inner.TotalPct-1 {
		t.Errorf("py::outer has %.1f%% total (listed %v), under py::inner's %.1f%%: stacks stop at the trampolines", outer.TotalPct, ok2, inner.TotalPct)
	}

	// The peer: perf inject --jit makes an ELF file of each trampoline
	// (with its unwind tables), then perf report names and unwinds them;
	// its total (children) shares must match gprof's.
	jitted := filepath.Join(dir, "jitted.data")
	if b, err := exec.Command("perf", "inject", "--jit", "-i", data, "-o", jitted).CombinedOutput(); err != nil {
		t.Fatalf("perf inject --jit: %v\n%s", err, b)
	}
	perf := perfReportChildren(t, jitted)
	for _, f := range []reportFunc{inner, outer} {
		p, ok := perf[f.Name]
		margin(t, f.Name+" total %, gprof - perf", f.TotalPct-p, 1)
		if !ok || math.Abs(p-f.TotalPct) > 1 {
			t.Errorf("%s: gprof %.2f%% total, perf report --children %.2f%% (listed %v)", f.Name, f.TotalPct, p, ok)
		}
	}
}

// perfReportChildren returns each symbol's total share ("Children") as
// 'perf report --children' computes it.
func perfReportChildren(t *testing.T, file string) map[string]float64 {
	t.Helper()
	b, err := exec.Command("perf", "report", "-i", file, "--stdio", "--children", "--sort", "symbol", "-g", "none", "--percent-limit", "0").Output()
	if err != nil {
		t.Fatalf("perf report: %v", err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		// "    96.94%     0.00%  [.] py::inner:/tmp/x.py   -   -"
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasSuffix(fields[0], "%") || fields[2] != "[.]" {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(fields[0], "%"), 64)
		if err == nil {
			out[fields[3]] += v
		}
	}
	return out
}

// TestJITDumpNode: node --perf-prof writes its jitdump in its working
// directory (not /tmp), which gprof finds by the mapping V8 makes of it;
// the JS function is named from it.
func TestJITDumpNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (./test.sh installs nodejs)")
	}
	const script = `function hotLoop(n) { let s = 0; for (let i = 0; i < n; i++) { s += Math.sqrt(i) % 3; } return s; }
let t = 0; const t0 = Date.now(); while (Date.now() - t0 < 1500) t += hotLoop(100000);
console.log(t);`
	work := t.TempDir()
	p := mustRecord(t, "-q", "--", "sh", "-c", `cd "$1" && exec "$2" --perf-prof --perf-prof-unwinding-info -e "$3" >/dev/null`, "sh", work, node, script).profile
	if m, _ := filepath.Glob(filepath.Join(work, "jit-*.dump")); len(m) == 0 {
		t.Fatal("node wrote no jitdump in its working directory")
	}
	rep := runReport(t, writeTemp(t, p))
	var hot reportFunc
	for _, f := range rep.All.TopTotal {
		if strings.HasPrefix(f.Name, "JS:") && strings.Contains(f.Name, "hotLoop") {
			hot.Name, hot.TotalPct = f.Name, hot.TotalPct+f.TotalPct
		}
		if (strings.HasPrefix(f.Name, "[anon]+0x") || strings.HasPrefix(f.Name, "[JIT] ")) && f.TotalPct >= 1 {
			t.Errorf("%s is unnamed in %.1f%% of samples", f.Name, f.TotalPct)
		}
	}
	// node's start-up (its CA certificates, the bootstrap) is a fifth
	// of its CPU here, more on a loaded machine.
	margin(t, "JS hotLoop total %", hot.TotalPct, 25)
	if hot.TotalPct < 25 {
		t.Errorf("hotLoop's code has %.1f%% total, want most of the samples; top: %v", hot.TotalPct, rep.All.TopTotal[:min(20, len(rep.All.TopTotal))])
	}
}
