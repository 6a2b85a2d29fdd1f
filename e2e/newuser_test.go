//go:build linux

package e2e

// What a newcomer trips on (issue 29), each as it was hit: a Python
// program's first recordings, read with report, --tree and diff.

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// threesScript is testdata/python/threes.py: hasher, jsoner and spinner
// in three threads.
func threesScript() string { return repoPath("testdata", "python", "threes.py") }

// python312 is pyenv's CPython 3.12, the one the issue was found with.
func python312(t *testing.T) string {
	t.Helper()
	py, ok := pythons(t)["3.12"]
	if !ok {
		t.Skip("no CPython 3.12 in pyenv")
	}
	return py
}

// A Python recording without --off-cpu is a CPU profile: its lists are
// headed CPU time, report --json says off_cpu false, and so it stays
// through a conversion. Its categories include Idle (the Python ones
// do), which the report once took for off-CPU samples. With --off-cpu the
// same program's lists are wall-clock time. The call tree brackets
// [python] once.
func TestPythonRecordingIsCPUTime(t *testing.T) {
	py := python312(t)
	for _, off := range []bool{false, true} {
		args := []string{"--", py, threesScript(), "0.3"}
		if off {
			args = append([]string{"--off-cpu"}, args...)
		}
		rec := mustRecord(t, args...)
		if got := rec.profile.Meta.Extra[profile.ExtraOffCPU]; got != map[bool]string{false: "false", true: "true"}[off] {
			t.Errorf("off-cpu %v: the profile says %s=%q", off, profile.ExtraOffCPU, got)
		}
		processed := filepath.Join(t.TempDir(), "processed.json.gz")
		if r := gprof(t, "convert", rec.out, "-o", processed); r.code != 0 {
			t.Fatalf("convert: %s", r.stderr)
		}
		for _, path := range []string{rec.out, processed} {
			r := gprof(t, "report", "--json", path)
			var rep struct {
				OffCPU bool `json:"off_cpu"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
				t.Fatalf("report --json %s: exit %d, %v: %s", path, r.code, err, r.stderr)
			}
			if rep.OffCPU != off {
				t.Errorf("off-cpu %v: report --json %s says off_cpu %v", off, filepath.Base(path), rep.OffCPU)
			}
			text := gprof(t, "report", path).stdout
			want, wrong := "Top by self CPU time", "wall-clock"
			if off {
				want, wrong = "Top by self wall-clock time", "Top by self CPU time"
			}
			if !strings.Contains(text, want) || strings.Contains(text, wrong) {
				t.Errorf("off-cpu %v: report of %s is not headed %q:\n%s", off, filepath.Base(path), want, text)
			}
		}
		tree := gprof(t, "report", "--tree", rec.out).stdout
		if !strings.Contains(tree, "jsoner  [python]") || strings.Contains(tree, "[[") {
			t.Errorf("report --tree does not bracket [python] once:\n%s", tree)
		}
	}
}
