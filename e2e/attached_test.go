//go:build linux

package e2e

import (
	"encoding/base64"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/profile"
)

// TestPtraceAttachedAgreesWithPerf: the ptrace backend attached to a
// running program nobody here wrote (xz -9 -T2 compressing base64, issue
// 26's case) puts its samples where the perf backend does.
// Both record the same 3 s (more on a busy machine) of the same process at once, so the program's
// own drift between phases (xz's top functions move by 4-8 points from
// one 3 s window to the next) is not mistaken for the samplers'. A
// sample's place is the user address it ran (kernel frames folded into
// the user code that entered the kernel: a ptrace stop cannot tell a page
// fault from the instruction that took it). Each of perf's five top
// addresses must be within 3 points or 4 sampling errors of the
// difference, whichever is larger, and the five within 2.5 errors rms
// (two perfect samplers exceed it once in 10^5 runs). Here, over 9 runs:
// 0.74 to 2.04 rms, every address within 3.6 points; the top one had
// 1.4 points more with ptrace on average (0.5 the error of that mean),
// a small bias the bound leaves room for. But a window now and then is
// off by more: over 18 runs of three builds (this session's and the two
// before it), the top address got 5.2 and 5.7 points more in one run
// each (otherwise within 2.9), and 2 windows of 23 went over 2.5 rms
// (2.65, 3.10), the same with each build. So a window that is off is
// judged again pooled with a second one: a perfect sampler passes that,
// and a sampler biased at every window shows it all the more. When issue 26 was filed the
// ptrace backend put 32.5% of its samples at the address where perf put
// 42.6%.
func TestPtraceAttachedAgreesWithPerf(t *testing.T) {
	xz, err := exec.LookPath("xz")
	if err != nil {
		t.Skip("xz is not installed (./test.sh installs it)")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data.b64")
	if err := os.WriteFile(data, []byte(base64.StdEncoding.EncodeToString(pseudoRandom(32<<20))), 0o644); err != nil {
		t.Fatal(err)
	}
	// xz -9 on 43 MB runs one block on one thread for 26 s here (the
	// issue's 16 MB: 10 s), so that a host twice as fast still outlasts
	// the recordings: the test attaches once it has started and records
	// 3 s, twice where the first window is off.
	cmd := exec.Command(xz, "-9", "-T2", "-c", data)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	// 3 s where xz has a CPU to itself, longer where it gets less (a
	// third of one beside two CPU-bound loops and the two recordings: 960
	// samples in 3 s), for about 3,000 samples each.
	before := processCPU(cmd.Process.Pid)
	time.Sleep(time.Second)
	secs := 3.0
	if rate := (processCPU(cmd.Process.Pid) - before).Seconds(); rate > 0 {
		secs = min(10, max(secs, math.Ceil(3/rate)))
	}
	pid := fmt.Sprint(cmd.Process.Pid)
	// window records secs with both backends at once and returns each
	// one's samples by user address, and their sums.
	window := func(n int) (perf, ptrace map[uint64]int, nPerf, nPtrace int) {
		outs := map[string]string{}
		gs := map[string]*bgGprof{}
		for _, backend := range backends {
			outs[backend] = filepath.Join(dir, fmt.Sprintf("%s%d.json.gz", backend, n))
			gs[backend] = startGprof(t, nil, "record", "-q", "--backend", backend, "--no-symbols", "-d", fmt.Sprint(secs), "-p", pid, "-o", outs[backend])
		}
		for backend, g := range gs {
			if !g.exited(60 * time.Second) {
				t.Fatal("gprof did not end")
			}
			if code := g.cmd.ProcessState.ExitCode(); code != 0 {
				skipIfNoBackend(t, g.stderr.String())
				t.Fatalf("gprof (%s) exited %d: %s", backend, code, g.stderr.String())
			}
		}
		select {
		case <-exited:
			t.Fatal("xz ended before the recordings did: give it more data")
		default:
		}
		perf, nPerf = userAddressShares(t, outs["perf"])
		ptrace, nPtrace = userAddressShares(t, outs["ptrace"])
		t.Logf("window %d: %d samples with perf, %d with ptrace", n, nPerf, nPtrace)
		logBackendStats(t, outs["ptrace"], "ptrace_")
		logBackendStats(t, outs["perf"], "sample_ratio")
		logBackendStats(t, outs["ptrace"], "sample_ratio")
		if nPerf < 1000 || nPtrace < 1000 {
			t.Fatalf("too few samples to compare: %d with perf, %d with ptrace", nPerf, nPtrace)
		}
		return perf, ptrace, nPerf, nPtrace
	}
	// judge compares perf's top five addresses and reports what is off
	// (none: they agree).
	judge := func(perf, ptrace map[uint64]int, nPerf, nPtrace int) (off []string) {
		top := make([]uint64, 0, len(perf))
		for a := range perf {
			top = append(top, a)
		}
		slices.SortFunc(top, func(a, b uint64) int { return perf[b] - perf[a] })
		top = top[:min(5, len(top))]
		var sumZ2 float64
		for _, a := range top {
			p, q := float64(perf[a])/float64(nPerf), float64(ptrace[a])/float64(nPtrace)
			se := math.Sqrt(p*(1-p)/float64(nPerf) + q*(1-q)/float64(nPtrace))
			d := 100 * (q - p)
			bound := max(3, 400*se)
			margin(t, fmt.Sprintf("%#x: ptrace %.1f%% less perf %.1f%% (bound ±%.1f)", a, 100*q, 100*p, bound), d, bound)
			if math.Abs(d) > bound {
				off = append(off, fmt.Sprintf("%#x: %.1f%% of ptrace's samples, %.1f%% of perf's: %.1f points apart, want at most %.1f", a, 100*q, 100*p, d, bound))
			}
			if se > 0 {
				sumZ2 += (q - p) * (q - p) / (se * se)
			}
		}
		rms := math.Sqrt(sumZ2 / float64(len(top)))
		margin(t, "perf's top addresses: ptrace's difference in sampling errors, rms", rms, 2.5)
		if rms > 2.5 {
			off = append(off, fmt.Sprintf("ptrace differs from perf by %.2f sampling errors rms over perf's top %d addresses, want 2.5 or less", rms, len(top)))
		}
		return off
	}
	perf, ptrace, nPerf, nPtrace := window(1)
	off := judge(perf, ptrace, nPerf, nPtrace)
	if len(off) > 0 {
		// One window in ten or so is off (see above): a second is
		// recorded, and the two are judged together, where a real bias
		// only shows the more.
		t.Logf("window 1 is off (%s); judging it pooled with a second", strings.Join(off, "; "))
		perf2, ptrace2, nPerf2, nPtrace2 := window(2)
		for a, c := range perf2 {
			perf[a] += c
		}
		for a, c := range ptrace2 {
			ptrace[a] += c
		}
		off = judge(perf, ptrace, nPerf+nPerf2, nPtrace+nPtrace2)
	}
	for _, msg := range off {
		t.Error(msg)
	}
}

// userAddressShares counts the samples of the profile's busiest process
// by the user address they ran: the leaf, or the user frame under a
// sample's kernel frames. It returns the counts and their sum.
func userAddressShares(t *testing.T, path string) (map[uint64]int, int) {
	t.Helper()
	p, err := gecko.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	counts, n := map[uint64]int{}, 0
	for _, pr := range p.Processes {
		for _, th := range pr.Threads {
			for _, s := range th.Samples.Stack {
				for ; s != profile.NoStack; s = th.Stacks.Prefix[s] {
					f := th.Frames.Frames[th.Stacks.Frame[s]]
					if f.Label == "" && f.Category != profile.CategoryKernel {
						counts[f.Address]++
						n++
						break
					}
				}
			}
		}
	}
	return counts, n
}

// processCPU returns the CPU time process pid has used (user and system,
// in clock ticks of 10 ms), 0 if unknown.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
