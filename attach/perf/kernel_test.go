//go:build linux

package perf

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/perfrecord"
)

// ddCommand spends most of its CPU time in read and write system calls.
var ddCommand = []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=1500000", "status=none"}

// Where the kernel allows it (root here), samples are taken in kernel
// mode too, without kernel stacks unless asked, and no time lacks a stack.
func TestKernelModeSampled(t *testing.T) {
	skipIfNoPerf(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root (or perf_event_paranoid <= 1) to sample kernel mode")
	}
	rec, res := record1(t, context.Background(), attach.Options{Command: ddCommand})
	in := 0
	for _, s := range rec.Samples {
		if s.InKernel {
			in++
			if s.KernelFrames != 0 {
				t.Fatalf("kernel frames without --kernel: %+v", s)
			}
		}
	}
	if len(rec.Samples) < 50 || in < len(rec.Samples)/5 {
		t.Errorf("%d of %d samples in kernel mode; dd spends most of its time there", in, len(rec.Samples))
	}
	if res.NoStackCPU != 0 {
		t.Errorf("%v with no stack where kernel mode is sampled", res.NoStackCPU)
	}
}

// Simulates perf_event_paranoid 2 without privileges: kernel mode is not
// sampled, but the samples' CPU deltas still carry the time spent there,
// and the result says how much of it had no stack.
func TestKernelModeDeniedCountsCPU(t *testing.T) {
	skipIfNoPerf(t)
	saved := perfEventOpen
	defer func() { perfEventOpen = saved }()
	perfEventOpen = func(a *unix.PerfEventAttr, pid, cpu, group, flags int) (int, error) {
		if a.Bits&unix.PerfBitExcludeKernel == 0 {
			return -1, unix.EACCES
		}
		return saved(a, pid, cpu, group, flags)
	}
	rec, res := record1(t, context.Background(), attach.Options{Command: ddCommand})
	var sum int64
	for _, s := range rec.Samples {
		if s.InKernel {
			t.Fatalf("a kernel-mode sample where kernel mode is denied: %+v", s)
		}
		sum += s.CPUDelta
	}
	sampled := int64(len(rec.Samples)) * int64(defaultInterval)
	if len(rec.Samples) < 50 {
		t.Fatalf("%d samples", len(rec.Samples))
	}
	if res.NoStackCPU < time.Duration(sum)/5 {
		t.Errorf("%v with no stack of %v of CPU time; dd spends most of its time in the kernel", res.NoStackCPU, time.Duration(sum))
	}
	if d := time.Duration(sum-sampled) - res.NoStackCPU; d < -5*time.Millisecond || d > 5*time.Millisecond {
		t.Errorf("CPU deltas sum to %v, samples cover %v, but %v is said to have no stack", time.Duration(sum), time.Duration(sampled), res.NoStackCPU)
	}
	if !strings.Contains(res.NoStackReason, "perf_event_paranoid") {
		t.Errorf("reason %q", res.NoStackReason)
	}
}

// Simulates paranoid 2 on a kernel before 6.12, which refuses
// PERF_SAMPLE_READ on inherited events: recording goes on, user mode only,
// and a notice says that system time is missing.
func TestKernelModeDeniedOldKernel(t *testing.T) {
	skipIfNoPerf(t)
	saved := perfEventOpen
	defer func() { perfEventOpen = saved }()
	perfEventOpen = func(a *unix.PerfEventAttr, pid, cpu, group, flags int) (int, error) {
		if a.Bits&unix.PerfBitExcludeKernel == 0 {
			return -1, unix.EACCES
		}
		if a.Sample_type&perfrecord.SampleRead != 0 && a.Bits&unix.PerfBitInherit != 0 {
			return -1, unix.EINVAL
		}
		return saved(a, pid, cpu, group, flags)
	}
	rec, res := record1(t, context.Background(), attach.Options{Command: ddCommand})
	if len(rec.Samples) < 20 {
		t.Fatalf("%d samples", len(rec.Samples))
	}
	for _, s := range rec.Samples {
		if s.InKernel || s.CPUDelta != int64(defaultInterval) {
			t.Fatalf("sample %+v; want user mode, one interval of CPU", s)
		}
	}
	if res.NoStackCPU != 0 {
		t.Errorf("%v with no stack, though the kernel could not count it", res.NoStackCPU)
	}
	if len(rec.notices) == 0 || !strings.Contains(strings.Join(rec.notices, "\n"), "time in system calls is missing") {
		t.Errorf("notices %q", rec.notices)
	}
}
