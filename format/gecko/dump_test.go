package gecko

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestDump writes the test profile (or, with $GECKO_DUMP_BIG set, the
// benchmark's) to $GECKO_DUMP for checking with external tools such as the
// front-end's importer.
func TestDump(t *testing.T) {
	path := os.Getenv("GECKO_DUMP")
	if path == "" {
		t.Skip("GECKO_DUMP not set")
	}
	p := testProfile()
	if os.Getenv("GECKO_DUMP_BIG") != "" {
		p = bigProfile()
	}
	if err := WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
}

// TestReadPeak reads $GECKO_READ and reports the process's peak resident
// memory, which the benchmarks cannot see.
func TestReadPeak(t *testing.T) {
	path := os.Getenv("GECKO_READ")
	if path == "" {
		t.Skip("GECKO_READ not set")
	}
	start := time.Now()
	p, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM") {
			t.Logf("%s: %d processes, read in %v; %s", path, len(p.Processes), d, line)
		}
	}
}
