package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestJITPerfMap: code generated at run time is named from the process's
// /tmp/perf-PID.map, which gprof reads while the process lives (the
// fixture deletes it on exit).
func TestJITPerfMap(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the JIT fixture emits x86-64 code")
	}
	bin := buildC(t, "jit")
	p := recordProfile(t, "--", bin)
	rep := runReport(t, writeTemp(t, p))
	f, ok := findFunc(rep.All.TopSelf, "jit_hot_loop")
	if !ok || f.SelfPct < 80 {
		t.Errorf("jit_hot_loop has %.1f%% self time, want most of it; top: %v", f.SelfPct, rep.All.TopSelf)
	}
}

// TestSymbolicate: a profile recorded without names gets them from
// 'gprof symbolicate', in either format.
func TestSymbolicate(t *testing.T) {
	bin := buildC(t, "split")
	dir := t.TempDir()
	raw := filepath.Join(dir, "raw.json.gz")
	r := gprof(t, "record", "-q", "--no-symbols", "-o", raw, "--", bin, "1", "0.3")
	skipIfNoPerf(t, r)
	if r.code != 0 {
		t.Fatalf("record: exit %d: %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(raw); len(b) == 0 {
		t.Fatal("empty profile")
	}
	for _, format := range []string{"gecko", "processed"} {
		out := filepath.Join(dir, format+".json")
		if r := gprof(t, "symbolicate", raw, "--format", format, "-o", out); r.code != 0 {
			t.Fatalf("symbolicate --format %s: exit %d: %s", format, r.code, r.stderr)
		}
		// Move the binary away: the names must now come from the file.
		rep := runReport(t, out)
		if _, ok := findFunc(rep.All.TopSelf, "work_a"); !ok {
			t.Errorf("%s output lacks work_a: %v", format, rep.All.TopSelf)
		}
	}
}

// TestRemappedText: code run from a second mapping of a binary's text, at
// an address away from where the binary was loaded (as V8 maps node's
// builtins), is named like the original, for an executable (ET_EXEC, as
// Debian's node is) and a position-independent one.
func TestRemappedText(t *testing.T) {
	for _, tc := range []struct{ name, flag string }{{"remap-exec", "-no-pie"}, {"remap-pie", "-pie"}} {
		t.Run(tc.name, func(t *testing.T) {
			bin := buildCAs(t, "remap", tc.name, tc.flag)
			p := recordProfile(t, "--", bin)
			rep := runReport(t, writeTemp(t, p))
			f, ok := findFunc(rep.All.TopSelf, "remapped_work")
			if !ok || f.SelfPct < 80 {
				t.Errorf("remapped_work has %.1f%% self time, want most of it; top: %v", f.SelfPct, rep.All.TopSelf)
			}
		})
	}
}

// TestNodeBuiltins: node's builtins run from a second mapping of
// /usr/bin/node that V8 makes away from the executable's link address;
// they are named as perf names them, and nothing in node is left as a
// bare address. Before gprof placed such mappings by their file offset,
// about 45% of this script's samples were node+0x7f....
func TestNodeBuiltins(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (.ci/run installs nodejs)")
	}
	const script = `const a = []; for (let i = 0; i < 64; i++) a.push("w" + i);
let n = 0; const t = Date.now();
while (Date.now() - t < 1000) { for (let k = 0; k < 1000; k++) n += a.join(",").length + a.indexOf("w" + (k & 63)); }
console.log(n);`
	// V8 may write isolate logs into the working directory.
	p := recordProfile(t, "--", "sh", "-c", `cd "$1" && exec "$2" --perf-basic-prof -e "$3" >/dev/null`, "sh", t.TempDir(), node, script)
	rep := runReport(t, writeTemp(t, p))
	for _, f := range rep.All.TopTotal {
		if strings.HasPrefix(f.Name, "node+0x") && f.TotalPct >= 0.5 {
			t.Errorf("%s is unnamed in %.1f%% of samples", f.Name, f.TotalPct)
		}
	}
	if f, ok := findFunc(rep.All.TopSelf, "Builtins_ArrayPrototypeJoin"); !ok || f.SelfPct < 10 {
		t.Errorf("Builtins_ArrayPrototypeJoin has %.1f%% self time, want at least 10%%; top: %v", f.SelfPct, rep.All.TopSelf[:min(8, len(rep.All.TopSelf))])
	}
}

// buildCAs compiles testdata/NAME.c once per test binary run, under its
// own name out, for variants of one program.
func buildCAs(t *testing.T, name, out string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed (.ci/run installs it)")
	}
	out = filepath.Join(fixtures, out)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	args := append([]string{"-O2", "-g", "-o", out, filepath.Join("testdata", name+".c")}, flags...)
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", name, err, b)
	}
	return out
}
