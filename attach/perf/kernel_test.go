//go:build linux

package perf

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/event"
)

// kernelTestRecord builds a sample record of tid 1235 on cpu with the
// given misc (cpu mode), period, READ count (when the sample type has
// it) and user callchain.
func kernelTestRecord(st uint64, misc uint16, cpu int, period, count uint64, user ...uint64) []byte {
	var rec []byte
	u64 := func(v uint64) { rec = ne.AppendUint64(rec, v) }
	u64(0) // header, patched below
	u64(0xffffffff81234567)
	u64(uint64(1234) | uint64(1235)<<32)
	u64(1_000_000_000)
	u64(uint64(cpu))
	u64(period)
	if st&unix.PERF_SAMPLE_READ != 0 {
		u64(count)
	}
	if len(user) == 0 {
		u64(0)
	} else {
		u64(uint64(len(user) + 1))
		u64(ctxUser)
		for _, a := range user {
			u64(a)
		}
	}
	ne.PutUint32(rec[0:], unix.PERF_RECORD_SAMPLE)
	ne.PutUint16(rec[4:], misc)
	ne.PutUint16(rec[6:], uint16(len(rec)))
	return rec
}

// A sample taken in kernel mode without its kernel stack says so, and
// keeps the user stack that entered the kernel, never the kernel IP.
func TestDecodeKernelModeSample(t *testing.T) {
	st := uint64(unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_CPU | unix.PERF_SAMPLE_PERIOD | unix.PERF_SAMPLE_CALLCHAIN)
	d := newDecoder(st, regsLayout{}, true)
	bt := &batch{}
	d.decode(kernelTestRecord(st, unix.PERF_RECORD_MISC_KERNEL, 1, 1e6, 0, 0x401000, 0x401010), bt)
	d.decode(kernelTestRecord(st, unix.PERF_RECORD_MISC_KERNEL, 1, 1e6, 0), bt)
	d.decode(kernelTestRecord(st, unix.PERF_RECORD_MISC_USER, 1, 1e6, 0, 0x401000), bt)
	if len(bt.events) != 3 {
		t.Fatalf("%d events", len(bt.events))
	}
	s := bt.events[0].(*event.Sample)
	if !s.InKernel || s.KernelFrames != 0 || fmt.Sprint(s.Stack) != fmt.Sprint([]uint64{0x401000, 0x401010}) || s.CPUDelta != 1e6 {
		t.Errorf("kernel-mode sample decoded as %+v", s)
	}
	if s := bt.events[1].(*event.Sample); !s.InKernel || len(s.Stack) != 0 {
		t.Errorf("kernel-mode sample with no user chain decoded as %+v; want no frames", s)
	}
	if s := bt.events[2].(*event.Sample); s.InKernel {
		t.Errorf("user-mode sample decoded as in the kernel: %+v", s)
	}
}

// Where only user mode is sampled, each sample's CPU delta is the growth
// of its event's count (which runs in kernel mode too) since the thread's
// previous sample on the same CPU, and the excess over the period is time
// with no stack. A thread's counts are forgotten a full round after it
// exits.
func TestDecodeSampleReadCPU(t *testing.T) {
	st := uint64(unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_CPU | unix.PERF_SAMPLE_PERIOD | unix.PERF_SAMPLE_READ | unix.PERF_SAMPLE_CALLCHAIN)
	d := newDecoder(st, regsLayout{}, true)
	d.readCPU = true
	bt := &batch{}
	for _, r := range []struct {
		cpu   int
		count uint64
	}{{1, 1e6}, {1, 5e6}, {0, 2e6}, {1, 6e6}} {
		d.decode(kernelTestRecord(st, unix.PERF_RECORD_MISC_USER, r.cpu, 1e6, r.count, 0x401000), bt)
	}
	var deltas []int64
	for _, e := range bt.events {
		deltas = append(deltas, e.(*event.Sample).CPUDelta)
	}
	if fmt.Sprint(deltas) != fmt.Sprint([]int64{1e6, 4e6, 2e6, 1e6}) {
		t.Errorf("CPU deltas %v, want [1ms 4ms 2ms 1ms] in ns", deltas)
	}
	if d.noStack != 4e6 {
		t.Errorf("no-stack time %d ns, want 4ms", d.noStack)
	}

	var exit []byte
	for _, v := range []uint64{0, 1234 | 1234<<32, 1235 | 1234<<32, 2e9} {
		exit = ne.AppendUint64(exit, v)
	}
	exit = append(exit, make([]byte, d.trailerLen)...)
	ne.PutUint32(exit[0:], unix.PERF_RECORD_EXIT)
	ne.PutUint16(exit[6:], uint16(len(exit)))
	d.decode(exit, bt)
	d.roundDone()
	if d.counts[1235] == nil {
		t.Fatal("counts forgotten in the round of the exit; samples from other rings may follow")
	}
	d.roundDone()
	if d.counts[1235] != nil {
		t.Error("counts of an exited thread kept")
	}
}

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
	for _, s := range rec.samples {
		if s.InKernel {
			in++
			if s.KernelFrames != 0 {
				t.Fatalf("kernel frames without --kernel: %+v", s)
			}
		}
	}
	if len(rec.samples) < 50 || in < len(rec.samples)/5 {
		t.Errorf("%d of %d samples in kernel mode; dd spends most of its time there", in, len(rec.samples))
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
	for _, s := range rec.samples {
		if s.InKernel {
			t.Fatalf("a kernel-mode sample where kernel mode is denied: %+v", s)
		}
		sum += s.CPUDelta
	}
	sampled := int64(len(rec.samples)) * int64(defaultInterval)
	if len(rec.samples) < 50 {
		t.Fatalf("%d samples", len(rec.samples))
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
		if a.Sample_type&unix.PERF_SAMPLE_READ != 0 && a.Bits&unix.PerfBitInherit != 0 {
			return -1, unix.EINVAL
		}
		return saved(a, pid, cpu, group, flags)
	}
	rec, res := record1(t, context.Background(), attach.Options{Command: ddCommand})
	if len(rec.samples) < 20 {
		t.Fatalf("%d samples", len(rec.samples))
	}
	for _, s := range rec.samples {
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
