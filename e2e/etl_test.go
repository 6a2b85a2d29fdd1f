//go:build linux

package e2e

import (
	"path/filepath"
	"testing"
)

// convert reads an ETL trace and keeps the processes --pid and --name
// select; a filter that selects nothing is a usage error.
func TestConvertETLFilters(t *testing.T) {
	trace := repoPath("etwevent", "testdata", "cut.etl")
	pids := func(path string) map[string]int {
		t.Helper()
		out := map[string]int{}
		for _, th := range readRaw(t, path)["threads"].([]any) {
			out[th.(map[string]any)["pid"].(string)]++
		}
		return out
	}
	dir := t.TempDir()
	all := filepath.Join(dir, "all.json")
	if r := gprof(t, "convert", trace, "-o", all); r.code != 0 {
		t.Fatalf("convert: %d %s", r.code, r.stderr)
	}
	if got := pids(all); len(got) < 3 || got["4"] == 0 {
		t.Fatalf("processes of the whole trace: %v", got)
	}
	for _, args := range [][]string{{"--pid", "4"}, {"--name", "Sys*"}} {
		out := filepath.Join(dir, "some.json")
		r := gprof(t, append([]string{"convert", trace, "-o", out}, args...)...)
		if r.code != 0 {
			t.Fatalf("convert %v: %d %s", args, r.code, r.stderr)
		}
		if got := pids(out); len(got) != 1 || got["4"] == 0 {
			t.Errorf("convert %v kept %v, want only pid 4", args, got)
		}
	}
	if r := gprof(t, "convert", trace, "--pid", "99999", "-o", filepath.Join(dir, "none.json")); r.code != 2 {
		t.Errorf("--pid matching nothing: exit %d, want 2 (%s)", r.code, r.stderr)
	}
}
