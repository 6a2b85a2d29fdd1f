//go:build linux

package ptrace

import (
	"fmt"
	"math/bits"
	"strings"
	"time"
)

// ptStats count what the stoppers did, for tests, diagnostics and
// bench/RESULTS.md.
type ptStats struct {
	ticks, samples int
	late           int // interrupted threads slower than ptStopLimit to stop
	denied         int // EPERM from PTRACE_SEIZE
	signals        int // signal-delivery-stops, the signal handed back
	// idle counts running threads left alone because they had not been
	// on a CPU since their last stop; offCPU stops of threads that were
	// waiting for the CPU at the tick (not samples).
	idle, offCPU int
	// waiting counts samples of threads that were waiting for the CPU at
	// the tick, taken off it by an interrupt (see take).
	waiting int
	// remote counts stops sent to a thread on a CPU with no stopper of
	// its own; behind, ticks that came late enough to skip one; dropped,
	// samples a full ring could not take.
	remote, behind, dropped int
	// moved counts threads that went to another CPU as they were let go;
	// unpinned, stoppers that could not be pinned to their CPU (one
	// outside gprof's cpuset), whose stops go to another CPU.
	moved, unpinned int
	// sweeps counts looks at all of a stopper's cold threads;
	// dutyCapped, ticks put off so that the stopper leaves its CPU to
	// others at least half the time.
	sweeps, dutyCapped int
	// adopted counts new threads a stopper found before the coordinator
	// (adopt.go).
	adopted int
	// catchUp counts ticks brought forward for a thread still owed a
	// sample after its last one; predicted, to a running thread's due
	// point; woken, for a thread handed over (worker.wake).
	catchUp, predicted, woken int
	// waited counts stops waited for in wait4 (see collect).
	waited int
	// capped is the CPU time threads ran past creditCap: owed no sample.
	capped time.Duration
	// paused is the time from interrupt to detach, summed over stops:
	// roughly how long the target's threads were kept from running.
	paused, maxPause time.Duration
	// entries counts samples by how their thread last entered the kernel.
	entries [4]int
	// latency is the time from interrupt to stop.
	latency latencyHist
}

func (s *ptStats) add(o *ptStats) {
	s.ticks += o.ticks
	s.samples += o.samples
	s.late += o.late
	s.denied += o.denied
	s.signals += o.signals
	s.idle += o.idle
	s.offCPU += o.offCPU
	s.waiting += o.waiting
	s.remote += o.remote
	s.behind += o.behind
	s.dropped += o.dropped
	s.moved += o.moved
	s.unpinned += o.unpinned
	s.sweeps += o.sweeps
	s.dutyCapped += o.dutyCapped
	s.adopted += o.adopted
	s.catchUp += o.catchUp
	s.predicted += o.predicted
	s.woken += o.woken
	s.waited += o.waited
	s.capped += o.capped
	s.paused += o.paused
	s.maxPause = max(s.maxPause, o.maxPause)
	for i := range s.entries {
		s.entries[i] += o.entries[i]
	}
	for i := range s.latency {
		s.latency[i] += o.latency[i]
	}
}

// latencyHist counts durations in powers of two of microseconds: bucket
// i holds [2^(i-1), 2^i) µs, bucket 0 less than 1 µs.
type latencyHist [24]int

func (h *latencyHist) add(d time.Duration) {
	us := uint64(d / time.Microsecond)
	h[min(bits.Len64(us), len(h)-1)]++
}

// quantile returns the upper bound of the bucket holding quantile q.
func (h *latencyHist) quantile(q float64) time.Duration {
	n := 0
	for _, c := range h {
		n += c
	}
	if n == 0 {
		return 0
	}
	want := int(q * float64(n))
	seen := 0
	for i, c := range h {
		seen += c
		if seen > want {
			return time.Duration(1<<i) * time.Microsecond
		}
	}
	return time.Duration(1<<(len(h)-1)) * time.Microsecond
}

func (h latencyHist) String() string {
	var b strings.Builder
	for i, c := range h {
		if c == 0 {
			continue
		}
		lo := 0
		if i > 0 {
			lo = 1 << (i - 1)
		}
		fmt.Fprintf(&b, " [%d,%d)µs:%d", lo, 1<<i, c)
	}
	return strings.TrimSpace(b.String())
}
