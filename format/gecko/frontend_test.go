package gecko

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestFrontEnd loads Write's output with the Firefox Profiler's own import
// code, when a checker that runs it is at hand ($FXCHECK, by default
// /work/fxcheck/check.mjs).
func TestFrontEnd(t *testing.T) {
	checker := os.Getenv("FXCHECK")
	if checker == "" {
		checker = "/work/fxcheck/check.mjs"
	}
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(checker); serr != nil || err != nil {
		t.Skip("no front-end checker")
	}
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "p.json"), filepath.Join(dir, "p.json.gz")}
	for _, path := range paths {
		if err := WriteFile(path, testProfile()); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range append(paths, "testdata/firefox-v25.json") {
		path := name
		out, err := exec.Command(node, checker, path, "--json", "--strict").Output()
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
			continue
		}
		var res struct {
			OK      bool
			Threads []struct {
				Name, ProcessName   string
				IsMainThread        bool
				OutsideLibAddresses int
			}
			LintWarnings    []any
			ConsoleMessages []any
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !res.OK || len(res.LintWarnings) > 0 || len(res.ConsoleMessages) > 0 {
			t.Errorf("%s: %s", name, out)
		}
		for _, th := range res.Threads {
			if th.OutsideLibAddresses > 0 {
				t.Errorf("%s: thread %s has %d addresses outside libs", name, th.Name, th.OutsideLibAddresses)
			}
		}
	}
}
