//go:build linux

package perf

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/attach"
)

// TestAttachFilteredPerCPU attaches to a shell that starts busy (two
// threads, 200 ms of CPU each) after the recording has begun, beside a
// busy program that is not a target. Attached processes are sampled by
// paced per-CPU events with the kernel keeping their samples alone
// (filter.go): the bystander's samples must never reach the rings (the
// decoder drops none), and busy, a child created after attaching, must be
// sampled from its start, each thread for its CPU time.
func TestAttachFilteredPerCPU(t *testing.T) {
	skipIfNoPerf(t)
	busy := testProgram(t, "busy")
	by := startForever(t, busy)
	out := filepath.Join(t.TempDir(), "cpu")
	sh := exec.Command("/bin/sh", "-c", fmt.Sprintf("sleep 0.3; %s %s 200; :", busy, out))
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sh.Process.Kill()
		sh.Wait()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t.Logf("sh %d, bystander %d", sh.Process.Pid, by.Process.Pid)
	rec, res := record1(t, ctx, attach.Options{Pids: []int{sh.Process.Pid}, Interval: time.Millisecond})
	for _, n := range rec.notices {
		if strings.Contains(n, "fixed interval") {
			t.Skipf("attached processes are sampled per thread here: %s", n)
		}
	}
	for k, v := range res.Stats {
		if strings.HasPrefix(k, "perf_") {
			t.Logf("%s: %s", k, v)
		}
	}
	if res.Layout != "per-cpu" || res.Stats["perf_pacers"] == "" {
		t.Fatalf("layout %s, pacers %q: want paced per-CPU events", res.Layout, res.Stats["perf_pacers"])
	}
	// The bystander ran throughout, on one of the CPUs the events
	// sample: about a thousand samples a second, had the kernel written
	// them.
	if other := res.Stats["perf_other_samples"]; other != "" {
		t.Errorf("the decoder dropped %s samples of other processes: the kernel's filter should have", other)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("busy wrote no CPU times: %v", err)
	}
	got := map[int]int{}
	for _, s := range rec.Samples {
		got[s.Tid]++
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var tid int
		var ns int64
		if _, err := fmt.Sscan(line, &tid, &ns); err != nil {
			t.Fatalf("busy's output %q: %v", data, err)
		}
		want := float64(ns) / 1e6
		// Per-CPU sampling lands on a thread in runs of up to a
		// scheduler tick beside another busy program (see the scale
		// test): four times a Poisson count's variance.
		bound := 0.95*want - 3*math.Sqrt(4*want) - 2
		margin := fmt.Sprintf("thread %d of busy, started after attaching: %d samples for %.0f ms of CPU (want at least %.0f)", tid, got[tid], want, bound)
		if float64(got[tid]) < bound {
			t.Error(margin)
		} else {
			t.Log(margin)
		}
	}
}

// TestAttachThreadFilteredPerCPU attaches to one thread (-t) of a process
// that starts another busy thread meanwhile: its process passes the
// kernel's filter, but only the thread attached may be in the recording,
// not the thread it starts (as with perf record -t).
func TestAttachThreadFilteredPerCPU(t *testing.T) {
	skipIfNoPerf(t)
	busy := testProgram(t, "busy")
	cmd := startForever(t, busy)
	pid := cmd.Process.Pid
	time.Sleep(100 * time.Millisecond) // let it map its libraries
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(100 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGUSR1) // a thread that burns 300 ms
		time.Sleep(500 * time.Millisecond)
		cancel()
	}()
	before := threadRunNs(t, pid)
	rec, res := record1(t, ctx, attach.Options{Tids: []int{pid}, Interval: time.Millisecond})
	ran := float64(threadRunNs(t, pid)-before) / 1e6 // ms of its CPU, about the recording's
	for _, n := range rec.notices {
		if strings.Contains(n, "fixed interval") {
			t.Skipf("attached threads are sampled per thread here: %s", n)
		}
	}
	if res.Layout != "per-cpu" {
		t.Fatalf("layout %s: want per-cpu", res.Layout)
	}
	got := map[int]int{}
	for _, s := range rec.Samples {
		got[s.Tid]++
	}
	t.Logf("samples by thread: %v for %.0f ms of the attached one's CPU; the decoder dropped %q", got, ran, res.Stats["perf_other_samples"])
	// Per-CPU sampling beside another busy thread: up to four times a
	// Poisson count's variance (see TestAttachFilteredPerCPU).
	if bound := 0.9*ran - 3*math.Sqrt(4*ran) - 5; float64(got[pid]) < bound {
		t.Errorf("%d samples of the thread attached for %.0f ms of its CPU, want at least %.0f", got[pid], ran, bound)
	}
	for tid, n := range got {
		if tid != pid {
			t.Errorf("%d samples of thread %d, which was not attached", n, tid)
		}
	}
}

// threadRunNs is thread tid's CPU time (schedstat), in ns.
func threadRunNs(t *testing.T, tid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", tid))
	if err != nil {
		t.Fatal(err)
	}
	var ns int64
	fmt.Sscan(string(data), &ns)
	return ns
}
