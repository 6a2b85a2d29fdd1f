//go:build linux && amd64

package unwind

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// threadCPU returns the calling thread's CPU time. The benchmarks report
// it per frame besides wall time, which on a shared CI machine is mostly
// time waiting for a CPU.
func threadCPU() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}

// deepSnapshot stops the recursion test program (49 frames, through libc
// without frame pointers) and returns its address space and stack copy.
func deepSnapshot(tb testing.TB) (*AddressSpace, snapshot) {
	tb.Helper()
	tg := start(tb, "eh", "recurse")
	tg.waitStopped(tb)
	as := addressSpace(tb, tg.pid)
	snap, err := capture(tg.pid, tg.tid, 64<<10, false)
	if err != nil {
		tb.Fatal(err)
	}
	return as, snap
}

func TestNoAllocs(t *testing.T) {
	as, snap := deepSnapshot(t)
	u := New()
	defer u.Close()
	out := u.Unwind(as, snap.regs, snap.stack, nil) // warm the caches
	if len(out) < 45 {
		t.Fatalf("only %d frames", len(out))
	}
	allocs := testing.AllocsPerRun(100, func() {
		out = u.Unwind(as, snap.regs, snap.stack, out[:0])
	})
	if allocs != 0 {
		t.Errorf("Unwind allocates %.1f times per %d-frame stack, want 0", allocs, len(out))
	}
}

// BenchmarkUnwind measures a warm unwind of a 49-frame stack copy.
func BenchmarkUnwind(b *testing.B) {
	as, snap := deepSnapshot(b)
	u := New()
	defer u.Close()
	out := u.Unwind(as, snap.regs, snap.stack, nil)
	frames := len(out)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := threadCPU()
	for b.Loop() {
		out = u.Unwind(as, snap.regs, snap.stack, out[:0])
	}
	cpu = threadCPU() - cpu
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(frames), "ns/frame")
	b.ReportMetric(float64(cpu)/float64(b.N)/float64(frames), "cpu-ns/frame")
	b.ReportMetric(float64(frames), "frames")
}

// BenchmarkUnwindCold measures the memo-miss path: finding the FDE through
// .eh_frame_hdr and running its CFI program, per frame.
func BenchmarkUnwindCold(b *testing.B) {
	as, snap := deepSnapshot(b)
	u := New()
	defer u.Close()
	out := u.Unwind(as, snap.regs, snap.stack, nil)
	frames := len(out)
	var used []int
	for i := range u.memo {
		if u.memo[i].mod != 0 {
			used = append(used, i)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := threadCPU()
	for b.Loop() {
		for _, i := range used {
			u.memo[i].mod = 0
		}
		out = u.Unwind(as, snap.regs, snap.stack, out[:0])
	}
	cpu = threadCPU() - cpu
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(frames), "ns/frame")
	b.ReportMetric(float64(cpu)/float64(b.N)/float64(frames), "cpu-ns/frame")
}
