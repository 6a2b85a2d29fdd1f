//go:build linux

package main

import (
	"os"
	"path/filepath"
	"runtime"
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
