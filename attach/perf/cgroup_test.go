//go:build linux

package perf

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A gprof killed outright leaves its command's cgroup behind; the next
// gprof removes it once its pid no longer runs, and leaves everything else.
func TestRemoveStaleCgroups(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	names := map[string]bool{ // name: should stay
		fmt.Sprintf("gprof-%d-1", dead.Process.Pid): false,
		fmt.Sprintf("gprof-%d-2", os.Getpid()):      true, // this gprof's own
		"gprof-1-1":                                 true, // a live pid
		"app":                                       true, // not gprof's
	}
	for n := range names {
		if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	removeStale(dir)
	for n, stay := range names {
		_, err := os.Stat(filepath.Join(dir, n))
		if got := err == nil; got != stay {
			t.Errorf("%s: there %v, want %v", n, got, stay)
		}
	}
}
