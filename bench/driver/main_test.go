//go:build linux

package main

import (
	"strings"
	"testing"
)

// A run rewrites its own sections in place and keeps the others.
func TestMergeSections(t *testing.T) {
	old := "# gprof benchmarks\n\nintro\n\n## 1. Cost\n\nold one\n\n## 7. Off-CPU\n\nby offcpu.sh\n\n## Where gprof loses\n\nprose\n"
	got := strings.Join(mergeSections(old, []string{"## 1. Cost\n\nnew one\n", "## 9. New\n\nnine\n"}), "|")
	want := "## 1. Cost\n\nnew one\n|## 7. Off-CPU\n\nby offcpu.sh\n|## Where gprof loses\n\nprose\n|## 9. New\n\nnine\n"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
