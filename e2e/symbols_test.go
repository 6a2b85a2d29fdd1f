//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
	p := mustRecord(t, "-q", "--", bin).profile
	rep := runReport(t, writeTemp(t, p))
	// Total, not self: time in the kernel (page faults, and on a loaded
	// machine preemption: 13% of samples beside two busy loops) is a
	// [kernel] frame on top of the function it interrupted.
	f, ok := findFunc(rep.All.TopTotal, "jit_hot_loop")
	margin(t, "jit_hot_loop total %", f.TotalPct, 80)
	if !ok || f.TotalPct < 80 {
		t.Errorf("jit_hot_loop has %.1f%% total time, want most of it; top: %v", f.TotalPct, rep.All.TopSelf)
	}
}

// TestSymbolicate: a profile recorded without names gets them from
// 'gprof symbolicate', in either format.
func TestSymbolicate(t *testing.T) {
	bin := buildC(t, "split")
	dir := t.TempDir()
	raw := filepath.Join(dir, "raw.json.gz")
	mustRecord(t, "-q", "--no-symbols", "-o", raw, "--", bin, "1", "0.3")
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

// TestRemappedText: code run from a second copy of a binary's text, at an
// address away from where the binary was loaded (as V8 makes of node's
// builtins), is named like the original, for an executable (ET_EXEC, as
// Debian's node is) and a position-independent one, whether the copy maps
// the file again or is copied into anonymous memory.
func TestRemappedText(t *testing.T) {
	for _, tc := range []struct{ name, flag string }{{"remap-exec", "-no-pie"}, {"remap-pie", "-pie"}} {
		for _, mode := range []string{"file", "anon"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				bin := buildCAs(t, "remap", tc.name, tc.flag)
				p := mustRecord(t, "-q", "--", bin, "400000000", mode).profile
				rep := runReport(t, writeTemp(t, p))
				// Total: time in the kernel is a [kernel] frame on top.
				f, ok := findFunc(rep.All.TopTotal, "remapped_work")
				margin(t, "remapped_work total %", f.TotalPct, 80)
				if !ok || f.TotalPct < 80 {
					t.Errorf("remapped_work has %.1f%% total time, want most of it; top: %v", f.TotalPct, rep.All.TopSelf)
				}
			})
		}
	}
}

// TestNodeBuiltins: node's builtins run from a second mapping of
// /usr/bin/node that V8 makes away from the executable's link address;
// they are named as perf names them, and nothing in node is left as a
// bare address. Before gprof placed such mappings by their file offset,
// about 45% of this script's samples were node+0x7f.... With node's text
// in huge pages (--use-largepages=on), V8 copies the builtins into
// anonymous memory instead, which perf leaves unnamed.
func TestNodeBuiltins(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (.ci/run installs nodejs)")
	}
	const script = `const a = []; for (let i = 0; i < 64; i++) a.push("w" + i);
let n = 0; const t = Date.now();
while (Date.now() - t < 1000) { for (let k = 0; k < 1000; k++) n += a.join(",").length + a.indexOf("w" + (k & 63)); }
console.log(n);`
	for _, pages := range []string{"off", "on"} {
		t.Run("largepages="+pages, func(t *testing.T) {
			// V8 may write isolate logs into the working directory.
			p := mustRecord(t, "-q", "--", "sh", "-c", `cd "$1" && exec "$2" --use-largepages="$3" --perf-basic-prof -e "$4" >/dev/null`,
				"sh", t.TempDir(), node, pages, script).profile
			rep := runReport(t, writeTemp(t, p))
			for _, f := range rep.All.TopTotal {
				if (strings.HasPrefix(f.Name, "node+0x") || strings.HasPrefix(f.Name, "[anon]+0x") || strings.HasPrefix(f.Name, "[JIT] ")) && f.TotalPct >= 0.5 {
					t.Errorf("%s is unnamed in %.1f%% of samples", f.Name, f.TotalPct)
				}
			}
			// Total, not self: time in the kernel (page faults, on a
			// loaded machine preemption) is a [kernel] frame on top.
			f, _ := findFunc(rep.All.TopTotal, "Builtins_ArrayPrototypeJoin")
			margin(t, "Builtins_ArrayPrototypeJoin total %", f.TotalPct, 10)
			if f, ok := findFunc(rep.All.TopTotal, "Builtins_ArrayPrototypeJoin"); !ok || f.TotalPct < 10 {
				t.Errorf("Builtins_ArrayPrototypeJoin has %.1f%% total time, want at least 10%%; top: %v", f.TotalPct, rep.All.TopSelf[:min(8, len(rep.All.TopSelf))])
			}
		})
	}
}

// TestSymbolDirMistakes: a --symbol-dir that is not there is a command
// line mistake, refused before anything runs; a debug file that is
// another build's is skipped, and said so once at the end.
func TestSymbolDirMistakes(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o644)
	missing := filepath.Join(dir, "no-such-dir")
	prof := filepath.Join(dir, "p.json") // never read: the flag is checked first
	for _, args := range [][]string{
		{"record", "-o", filepath.Join(dir, "r.json"), "--symbol-dir", missing, "--", "touch", marker},
		{"record", "-o", filepath.Join(dir, "r.json"), "--symbol-dir", notDir, "--", "touch", marker},
		{"convert", "--symbol-dir", missing, "-o", filepath.Join(dir, "c.json"), prof},
		{"symbolicate", "--symbol-dir", missing, "-o", filepath.Join(dir, "s.json"), prof},
		{"report", "--symbol-dir", missing, prof},
	} {
		r := gprof(t, args...)
		bad := args[slices.Index(args, "--symbol-dir")+1]
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "--symbol-dir "+bad) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line about --symbol-dir %s", args, r.code, r.stderr, bad)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("record ran the command despite a bad --symbol-dir")
	}

	// The binary keeps its build-id but no symbols; the symbol directory
	// has a debug file of the same name from another build.
	src := buildC(t, "split")
	bin := filepath.Join(dir, "split")
	if b, err := exec.Command("objcopy", "--strip-all", src, bin).CombinedOutput(); err != nil {
		t.Skipf("objcopy: %v %s", err, b)
	}
	other := buildCAs(t, "split", "split-O1", "-O1", "-pthread")
	sd := t.TempDir()
	stale := filepath.Join(sd, "split.debug")
	if b, err := exec.Command("objcopy", "--only-keep-debug", other, stale).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v %s", err, b)
	}
	raw := filepath.Join(dir, "raw.json")
	r := gprof(t, "record", "--symbol-dir", sd, "-o", raw, "--", bin, "1", "0.2")
	skipIfNoPerf(t, r)
	want := "gprof: ignored debug file " + stale + ": its build-id "
	if r.code != 0 || strings.Count(r.stderr, want) != 1 {
		t.Errorf("record: exit %d, stderr %q; want one notice %q", r.code, r.stderr, want)
	}
	r = gprof(t, "record", "--no-symbols", "-q", "-o", raw, "--", bin, "1", "0.2")
	if r.code != 0 {
		t.Fatalf("record: exit %d: %s", r.code, r.stderr)
	}
	r = gprof(t, "convert", "--symbol-dir", sd, "-o", filepath.Join(dir, "c.json"), raw)
	if r.code != 0 || strings.Count(r.stderr, want) != 1 {
		t.Errorf("convert: exit %d, stderr %q; want one notice %q", r.code, r.stderr, want)
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
	if b, err := rootCommand("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", name, err, b)
	}
	return out
}
