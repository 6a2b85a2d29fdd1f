//go:build linux

package e2e

// End-to-end checks of off-CPU sampling (record --off-cpu): every thread
// gets a sample per interval of its life, and waits show where they wait.

import (
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// offcpuTruth is what testdata/offcpu prints for one thread.
type offcpuTruth struct {
	tid       int
	phases    map[string]int64 // compute_ns, wait_ns, nap_ns
	cpu, life int64
}

func offcpuTruths(t *testing.T, out string) map[string]offcpuTruth {
	t.Helper()
	m := map[string]offcpuTruth{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || len(f)%2 != 0 {
			continue
		}
		tid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		tr := offcpuTruth{tid: tid, phases: map[string]int64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, _ := strconv.ParseInt(f[i+1], 10, 64)
			switch f[i] {
			case "cpu_ns":
				tr.cpu = v
			case "life_ns":
				tr.life = v
			default:
				tr.phases[f[i]] = v
			}
		}
		m[f[0]] = tr
	}
	if len(m) != 2 {
		t.Fatalf("want the worker's and the sleeper's figures in the program's output, got %q", out)
	}
	return m
}

// share is the fraction of the samples in stacks whose frames include fn.
func share(stacks map[string]int, fn string) (float64, int) {
	all, in := 0, 0
	for s, n := range stacks {
		all += n
		if fn == "" || containsStr(strings.Split(s, ";"), fn) {
			in += n
		}
	}
	return float64(in) / math.Max(1, float64(all)), all
}

func containsStr(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

// TestOffCPUKnownSplit is the acceptance check: a worker that
// computes about 30% and waits in read() about 70% of the time, and a
// sleeper in nanosleep, against their own clocks.
func TestOffCPUKnownSplit(t *testing.T) {
	bin := buildC(t, "offcpu")
	out := filepath.Join(t.TempDir(), "offcpu.json.gz")
	r := mustRecord(t, "--off-cpu", "-q", "-o", out, "--", bin, "2")
	truth := offcpuTruths(t, r.stdout)

	// Wall-clock shares within 2 points of the thread's own measure.
	w := truth["worker"]
	stacks := collapsed(t, out, "worker")
	for fn, ns := range map[string]int64{"compute": w.phases["compute_ns"], "wait_for_data": w.phases["wait_ns"]} {
		got, n := share(stacks, fn)
		want := float64(ns) / float64(w.life)
		margin(t, "worker "+fn+" share (±0.02)", got, want)
		if math.Abs(got-want) > 0.02 {
			t.Errorf("worker: %s in %.1f%% of %d samples; the thread measured %.1f%% of its life", fn, 100*got, n, 100*want)
		}
	}
	s := truth["sleeper"]
	sleeperStacks := collapsed(t, out, "sleeper")
	margin(t, "sleeper nap share (±0.02)", must(share(sleeperStacks, "nap")), float64(s.phases["nap_ns"])/float64(s.life))
	if got, want := must(share(sleeperStacks, "nap")), float64(s.phases["nap_ns"])/float64(s.life); math.Abs(got-want) > 0.02 {
		t.Errorf("sleeper: nap in %.1f%% of samples; the thread measured %.1f%%", 100*got, 100*want)
	}
	// Samples over the whole life, one per interval.
	for name, st := range map[string]map[string]int{"worker": stacks, "sleeper": sleeperStacks} {
		_, n := share(st, "")
		margin(t, name+" samples per ms of life (±0.03+5)", float64(n), float64(truth[name].life)/1e6)
		if want := float64(truth[name].life) / 1e6; math.Abs(float64(n)-want) > 0.03*want+5 {
			t.Errorf("%s: %d samples over a life of %.0f ms at 1 ms", name, n, want)
		}
	}

	// Blocked samples show the function that called read or nanosleep.
	for name, fn := range map[string]string{"worker": "wait_for_data", "sleeper": "nap"} {
		st := map[string]map[string]int{"worker": stacks, "sleeper": sleeperStacks}[name]
		blocked, through := 0, 0
		for stack, n := range st {
			if strings.HasSuffix(stack, ";[blocked]") {
				blocked += n
				if containsStr(strings.Split(stack, ";"), fn) {
					through += n
				}
			}
		}
		if blocked == 0 || float64(through) < 0.97*float64(blocked) {
			t.Errorf("%s: %d of %d blocked samples pass through %s", name, through, blocked, fn)
		}
	}

	// CPU deltas add up to the thread's own CPU time.
	p := r.profile
	for name, tr := range truth {
		found := false
		for _, pr := range p.Processes {
			for _, th := range pr.Threads {
				if th.Tid != tr.tid {
					continue
				}
				found = true
				var sum int64
				for _, d := range th.Samples.CPUDelta {
					sum += max(d, 0)
				}
				// 2%, plus the part of a period (1 ms) left unsampled
				// on each CPU. A nearly idle thread (the sleeper: a few
				// ms in all, in wake-ups far shorter than a period) is
				// not held to it: bursts that never complete a period
				// of the sampling clock carry no CPU delta (a known
				// limit, in docs/recording.md), so its sum is only logged.
				if tr.cpu < 100e6 {
					t.Logf("%s: CPU deltas sum to %.1f ms; the thread measured %.1f ms", name, float64(sum)/1e6, float64(tr.cpu)/1e6)
					continue
				}
				margin(t, name+" CPU delta sum ms (±2%+2)", float64(sum)/1e6, float64(tr.cpu)/1e6)
				if math.Abs(float64(sum-tr.cpu)) > 0.02*float64(tr.cpu)+float64(runtime.NumCPU())*1e6 {
					t.Errorf("%s: CPU deltas sum to %.1f ms; the thread measured %.1f ms", name, float64(sum)/1e6, float64(tr.cpu)/1e6)
				}
			}
		}
		if !found {
			t.Errorf("%s (tid %d) is missing from the profile", name, tr.tid)
		}
	}
}

func must(f float64, _ int) float64 { return f }

// TestOffCPUProcessedCPU: the processed output carries the same CPU
// deltas as the Gecko profile, thread by thread, and report --by cpu ranks
// the computing function first where --by wall ranks the wait.
func TestOffCPUProcessedCPU(t *testing.T) {
	bin := buildC(t, "offcpu")
	dir := t.TempDir()
	out, conv := filepath.Join(dir, "offcpu.json"), filepath.Join(dir, "offcpu.processed.json")
	mustRecord(t, "--off-cpu", "-q", "-o", out, "--", bin, "0.5")
	if r := gprof(t, "convert", "-o", conv, out); r.code != 0 {
		t.Fatalf("convert: exit %d: %s", r.code, r.stderr)
	}
	sums := func(path string, processed bool) map[string]float64 {
		m := map[string]float64{}
		for _, th := range readRaw(t, path)["threads"].([]any) {
			tm := th.(map[string]any)
			samples := tm["samples"].(map[string]any)
			sum := 0.0
			if processed {
				for _, v := range samples["threadCPUDelta"].([]any) {
					if v != nil {
						sum += v.(float64)
					}
				}
			} else {
				for _, row := range samples["data"].([]any) {
					if v := row.([]any)[3]; v != nil {
						sum += v.(float64)
					}
				}
			}
			m[tm["gprofName"].(string)] = sum
		}
		return m
	}
	g, p := sums(out, false), sums(conv, true)
	if len(g) != 3 {
		t.Fatalf("threads %v", g)
	}
	for name, v := range g {
		if math.Abs(p[name]-v) > 1e-6*v+1e-3 {
			t.Errorf("%s: CPU %.3f µs in the Gecko profile, %.3f µs in the processed one", name, v, p[name])
		}
	}
	// Waiting (blocked, or preempted on a busy machine) is most of the
	// worker's wall-clock time, and none of its CPU time.
	for by, first := range map[string]string{"wall": "[blocked] [preempted]", "cpu": "compute"} {
		rep := runReport(t, out, "--by", by, "--thread", "worker")
		if len(rep.All.TopSelf) == 0 || !containsStr(strings.Fields(first), rep.All.TopSelf[0].Name) {
			t.Errorf("report --by %s: top self %+v, want %s first", by, rep.All.TopSelf, first)
		}
	}
}

// TestOffCPUSleep: `record --off-cpu -- sleep 1` is a second of samples in
// nanosleep, where a CPU-only profile has next to none. With ptrace, the
// thread once looped between the two CPUs' stoppers, each taking the
// restart of its sleep after the other's stop for a wake-up (see look in
// attach/ptrace): 715 to 990 samples in a third of runs, below 950 in
// one in ten; now 999 to 1,011 in 96, quiet and beside two CPU-bound
// loops, as the perf backend's 1,000 to 1,009.
func TestOffCPUSleep(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	for _, backend := range []string{"perf", "ptrace"} {
		t.Run(backend, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "sleep.json")
			mustRecord(t, "--off-cpu", "--backend", backend, "-q", "-o", out, "--", sleep, "1")
			stacks := collapsed(t, out, "sleep")
			all, in := 0, 0
			nanosleep := regexp.MustCompile(`;__GI___nanosleep;.*nanosleep;\[blocked\]$`)
			for s, n := range stacks {
				all += n
				if nanosleep.MatchString(s) {
					in += n
				}
			}
			// ptrace finds the wait at its next look, a tick late.
			margin(t, "sleep 1 samples (985..1100)", float64(all), 1000)
			margin(t, "sleep 1 in nanosleep", float64(in)/float64(all), 0.97)
			if all < 985 || all > 1100 || float64(in) < 0.97*float64(all) {
				t.Errorf("sleep 1: %d samples, %d blocked in nanosleep; want about 1000, nearly all in nanosleep:\n%v", all, in, stacks)
			}
		})
	}
}
