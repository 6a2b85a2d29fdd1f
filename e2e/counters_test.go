//go:build linux

package e2e

// End-to-end checks of the counters and overhead a recording carries by
// default: each process's memory, and gprof's own cost per loop.

import (
	"bytes"
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestMemoryCounterFollowsRSS: a program that grows to 200 MB in steps,
// each reported from /proc/self/statm, shows every step in its memory
// counter's running sum, which is what the front-end's memory track draws.
func TestMemoryCounterFollowsRSS(t *testing.T) {
	bin := buildC(t, "alloc")
	out := filepath.Join(t.TempDir(), "alloc.json")
	r := mustRecord(t, "-q", "--no-symbols", "-o", out, "--", bin)
	var steps []float64
	for _, m := range regexp.MustCompile(`step \d+ rss_bytes (\d+)`).FindAllStringSubmatch(r.stdout, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		steps = append(steps, v)
	}
	if len(steps) != 20 {
		t.Fatalf("want 20 steps in the program's output, got %q", r.stdout)
	}
	raw := readRaw(t, out)
	var mem []float64 // running sum of the counter
	for _, c := range raw["counters"].([]any) {
		cm := c.(map[string]any)
		if cm["category"] != "Memory" {
			continue
		}
		sum := 0.0
		for _, row := range cm["samples"].(map[string]any)["data"].([]any) {
			sum += row.([]any)[1].(float64)
			mem = append(mem, sum)
		}
	}
	if len(mem) == 0 {
		t.Fatal("no Memory counter in the profile")
	}
	for i, want := range steps {
		best := math.Inf(1)
		for _, v := range mem {
			best = math.Min(best, math.Abs(v-want))
		}
		if best > 0.01*want+512<<10 { // stdio buffers come after the reading
			t.Errorf("step %d: RSS %.1f MB; the closest memory counter value is %.1f MB off", i+1, want/1e6, best/1e6)
		}
	}
}

// TestProfilerOverheadMatchesOwnCPU: the profilerOverhead's loops add up
// to the CPU time gprof itself used, as the kernel counts it.
func TestProfilerOverheadMatchesOwnCPU(t *testing.T) {
	spin := startSpin(t)
	out := filepath.Join(t.TempDir(), "spin.json")
	cmd := exec.Command(gprofBin, "record", "-q", "--no-symbols", "-d", "3", "-p", strconv.Itoa(spin.Process.Pid), "-o", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		skipIfNoPerf(t, result{stderr: stderr.String(), code: 1})
		t.Fatalf("record: %v: %s", err, stderr.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	own := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())

	raw := readRaw(t, out)
	po, ok := raw["profilerOverhead"].(map[string]any)
	if !ok {
		t.Fatal("no profilerOverhead in the profile")
	}
	st := po["statistics"].(map[string]any)
	n := st["samplingCount"].(float64)
	total := time.Duration(st["meanOverhead"].(float64) * n * 1e3)
	if n < 100 {
		t.Errorf("only %.0f sampling loops in 3 s", n)
	}
	// gprof's CPU before its first loop and after its last is in no loop:
	// its start-up (the runtime, opening the events, loading their BPF
	// programs, mapping the reader's first batches) and writing the
	// profile, 40-55 ms here, quiet or beside two CPU-bound loops, whatever
	// the loops took (215-340 ms). So the loops may fall short of it by
	// that and a tenth, and exceed it by a tenth (the two clocks differ).
	const outside = 75 * time.Millisecond
	short := own - total
	margin(t, "CPU outside the loops, ms (bound: a tenth of gprof's + 75)", float64(short)/1e6, float64(own/10+outside)/1e6)
	if short > own/10+outside || -short > own/10 {
		t.Errorf("profilerOverhead: %.0f loops, mean %.1f µs, %v in all; gprof used %v of CPU", n, st["meanOverhead"], total, own)
	}
	t.Logf("profilerOverhead: %.0f loops, mean %.1f µs, %v in all; gprof used %v of CPU", n, st["meanOverhead"], total, own)
}
