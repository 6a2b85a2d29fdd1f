//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRecordIdleTargetIsAnError: attaching to a process that never runs
// (issue 18: record -p 1) gives no profile and a non-zero exit, as
// attaching to a kernel thread does, rather than an empty profile and 0.
func TestRecordIdleTargetIsAnError(t *testing.T) {
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	out := filepath.Join(t.TempDir(), "idle.json.gz")
	r := gprof(t, "record", "-p", strconv.Itoa(sleeper.Process.Pid), "-d", "0.3", "-o", out)
	skipIfNoPerf(t, r)
	if r.code != 1 || !strings.Contains(r.stderr, "nothing was sampled: pid "+strconv.Itoa(sleeper.Process.Pid)) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("an empty profile was written")
	}
}
