//go:build linux

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestStrippedGoCallers is issue 18's first check: a Go program built
// without DWARF (-ldflags=-s -w, as the Go toolchain itself is) where
// main.caller calls a hot frameless leaf, main.heavy, and then an inlined
// main.mix. Frame pointers alone skip the caller of a frameless leaf, and
// a caller looked up at its return address lands in the inlined mix;
// every heavy sample must read main.main;main.caller;main.heavy.
func TestStrippedGoCallers(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "gocaller")
	build := rootCommand("go", "build", "-ldflags=-s -w", "-o", bin, "./testdata/gocaller")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	for _, backend := range []string{"perf", "ptrace"} {
		t.Run(backend, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "g.json.gz")
			mustRecord(t, "-q", "--backend", backend, "-o", out, "--", bin)
			heavy, right, mixed := 0, 0, 0
			var wrong []string
			for stack, n := range collapsed(t, out, "gocaller") {
				fs := strings.Split(stack, ";")
				if fs[len(fs)-1] != "main.heavy" {
					continue
				}
				heavy += n
				switch {
				case strings.HasSuffix(stack, ";main.main;main.caller;main.heavy"):
					right += n
				case strings.Contains(stack, "main.mix"):
					mixed += n
				default:
					if len(wrong) < 5 {
						wrong = append(wrong, stack)
					}
				}
			}
			if heavy < 50 {
				t.Fatalf("only %d samples in main.heavy", heavy)
			}
			margin(t, "heavy samples under main.main;main.caller", float64(right)/float64(heavy), 0.95)
			if float64(right) < 0.95*float64(heavy) || mixed > 0 {
				t.Errorf("%d of %d main.heavy samples under main.main;main.caller (want ≥ 95%%), %d under main.mix; others: %q",
					right, heavy, mixed, wrong)
			}
		})
	}
}
