//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordJSONOutputApart: with --json-output FILE the launched
// command's stdout is exactly its own (so a CI log or pipe stays clean),
// and FILE holds the whole summary, written without leftovers. --json
// still prints the summary on stdout, after the command's output.
func TestRecordJSONOutputApart(t *testing.T) {
	dir := t.TempDir()
	sumPath := filepath.Join(dir, "summary.json")
	prog := `echo out; echo '{"not": "the summary"}'; exit 3`
	r := mustRecordExit(t, 4, "-q", "--json-output", sumPath, "-o", filepath.Join(dir, "p.json.gz"), "--", "sh", "-c", prog).result
	if want := "out\n{\"not\": \"the summary\"}\n"; r.stdout != want {
		t.Errorf("stdout %q, want only the command's %q", r.stdout, want)
	}
	b, err := os.ReadFile(sumPath)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Version  int    `json:"version"`
		Output   string `json:"output"`
		ExitCode *int   `json:"exit_code"`
	}
	if err := json.Unmarshal(b, &sum); err != nil || sum.Version != 1 || sum.ExitCode == nil || *sum.ExitCode != 3 {
		t.Errorf("summary %s: %v %+v", b, err, sum)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left behind: %s", e.Name())
		}
	}

	r = gprof(t, "record", "-q", "--json", "-o", filepath.Join(dir, "q.json.gz"), "--", "sh", "-c", "echo out")
	head, tail, ok := strings.Cut(r.stdout, "\n")
	if r.code != 0 || !ok || head != "out" || json.Unmarshal([]byte(tail), &sum) != nil || sum.Version != 1 {
		t.Errorf("--json: exit %d, stdout %q: want the command's line, then the summary", r.code, r.stdout)
	}
}
