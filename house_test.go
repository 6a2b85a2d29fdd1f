package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestOneTestCommand: README.md's test command and CI's are the same
// script, so what passes in CI passes for a new user following the README.
func TestOneTestCommand(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile("(?m)^# 2\\..*\n\\./test\\.sh$").Match(readme) {
		t.Error("README.md's Set up step 2 is not ./test.sh")
	}
	if !regexp.MustCompile(`(?m)^\./test\.sh$`).Match(ci) {
		t.Error(".ci/run does not run ./test.sh")
	}
	for _, line := range strings.Split(string(ci), "\n") {
		// go test -c only compiles (the darwin test binaries): fine.
		runsTests := strings.Contains(line, "go test") && !strings.Contains(line, "go test -c")
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if runsTests || strings.Contains(line, "apt-get") {
			t.Errorf(".ci/run tests or installs on its own (%q): leave that to ./test.sh", line)
		}
	}
	if _, err := os.Stat("test.sh"); err != nil {
		t.Error(err)
	}
}
