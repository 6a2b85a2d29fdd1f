//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/format/gecko"
)

// Attaching at scale: a process with 10,000 idle threads and 2 busy ones,
// attached with both backends, the perf backend under `ulimit -n 1024`
// (one event per thread and CPU would take 20,000 files here, as many as
// a 64-CPU machine would need without the limit): each busy thread gets
// its samples, and the perf backend says which layout it used.
func TestAttachManyThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 10,000 threads")
	}
	if os.Geteuid() != 0 {
		// The per-CPU layout, the one that fits 1024 files, needs
		// CAP_PERFMON; without it gprof refuses in one line (checked
		// below when not root).
		t.Log("not root: the perf backend is expected to refuse")
	}
	bin := buildC(t, "threads")
	for _, be := range []string{"perf", "ptrace"} {
		t.Run(be, func(t *testing.T) {
			const idle, busy, burn = 10000, 2, 1.5
			fix := exec.Command(bin, strconv.Itoa(idle), strconv.Itoa(busy), fmt.Sprint(burn))
			stdin, err := fix.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := fix.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var fixErr bytes.Buffer
			fix.Stderr = &fixErr
			if err := fix.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { fix.Process.Kill(); fix.Wait() }()
			lines := bufio.NewScanner(stdout)
			if !lines.Scan() || !strings.HasPrefix(lines.Text(), "ready ") {
				fix.Process.Kill()
				fix.Wait()
				t.Skipf("the fixture could not start %d threads here: %s", idle, fixErr.String())
			}
			pid := fix.Process.Pid

			dir := t.TempDir()
			out, sum := filepath.Join(dir, "p.json.gz"), filepath.Join(dir, "summary.json")
			// sh sets both limits: gprof cannot raise the soft one.
			g := exec.Command("sh", "-c", `ulimit -n 1024 && exec "$0" "$@"`, gprofBin, "record", "-q", "--backend", be,
				"-p", strconv.Itoa(pid), "-o", out, "--json-output", sum)
			var gerr bytes.Buffer
			g.Stderr = &gerr
			start := time.Now()
			if err := g.Start(); err != nil {
				t.Fatal(err)
			}
			// Give gprof time to attach (it says how long it took in
			// the profile, checked below), then let the busy threads go.
			const settle = 3 * time.Second
			time.Sleep(settle)
			fmt.Fprintln(stdin, "go")
			var report strings.Builder
			for lines.Scan() {
				report.WriteString(lines.Text() + "\n")
			}
			fix.Wait()
			if err := g.Wait(); err != nil {
				if be == "perf" && os.Geteuid() != 0 && strings.Contains(gerr.String(), "ulimit") {
					return // refused in one line, with what to do
				}
				t.Fatalf("gprof record: %v after %v\n%s", err, time.Since(start), gerr.String())
			}
			var s struct {
				Layout string `json:"event_layout"`
				Files  int    `json:"event_files"`
			}
			data, err := os.ReadFile(sum)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &s); err != nil {
				t.Fatal(err)
			}
			if be == "perf" && (s.Layout != "per-cpu" || s.Files > 64) {
				t.Errorf("perf layout %q with %d files under ulimit -n 1024; want per-cpu", s.Layout, s.Files)
			}
			p, err := gecko.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			setupKey := be + "_setup_ms"
			ms, _ := strconv.ParseFloat(p.Meta.Extra[setupKey], 64)
			margin(t, "setup ms", ms, float64(settle.Milliseconds()))
			if ms <= 0 || ms >= float64(settle.Milliseconds()) {
				t.Fatalf("%s = %q: attaching took longer than the %v the test waited", setupKey, p.Meta.Extra[setupKey], settle)
			}
			for k, v := range p.Meta.Extra {
				if strings.HasPrefix(k, be+"_") {
					t.Logf("%s: %s", k, v)
				}
			}
			threads := 0
			for _, pr := range p.Processes {
				threads += len(pr.Threads)
			}
			if threads < idle {
				t.Errorf("%d threads in the profile, want the %d idle ones too", threads, idle)
			}
			by := samplesByTid(p)
			cpu := workerCPU(t, report.String())
			interval := p.Meta.Interval
			var sumWant, sumGot float64
			for tid, ns := range cpu {
				want := float64(ns) / float64(interval)
				sumWant += want
				sumGot += float64(by[tid])
				// perf per-thread: the kernel samples every interval
				// of the thread's CPU time. perf per-CPU (the layout
				// under this ulimit): a CPU's clock lands on whichever
				// thread runs at its tick, and beside other busy
				// programs a thread runs in slices of a scheduler tick
				// (up to 4 ms), so its samples come in runs of up to 4:
				// right on average, with 4 times a Poisson count's
				// variance. ptrace: ticks jitter (see TestSamplersKeepUp),
				// and at this scale its stoppers share their CPUs with
				// looks at 10,000 idle threads (a sweep when one of them
				// may have run: tens of ms of a stopper's CPU): it gets
				// 0.84 to 0.95 of a busy thread's samples on a quiet 2-CPU
				// VM, and gprof says so below 0.8 (record's
				// shortfallLimit), which is the bound.
				bound := 0.95*want - 2
				switch {
				case be == "ptrace":
					bound = 0.8*want - 3*math.Sqrt(want/12) - 1
				case s.Layout == "per-cpu":
					bound = 0.95*want - 3*math.Sqrt(4*want) - 2
				}
				margin(t, fmt.Sprintf("busy thread %d samples (%.0f expected)", tid, want), float64(by[tid]), bound)
				if float64(by[tid]) < bound {
					t.Errorf("busy thread %d: %d samples for %.0f ms of CPU, want ≥ %.0f", tid, by[tid], float64(ns)/1e6, bound)
				}
			}
			// Together the busy threads get every interval of their
			// CPU time, whichever thread each sample lands on.
			if be == "perf" {
				// As each thread's, with the per-CPU layout's variance.
				bound := 0.95*sumWant - 2
				if s.Layout == "per-cpu" {
					bound = 0.95*sumWant - 3*math.Sqrt(4*sumWant) - 2
				}
				margin(t, "busy threads' samples together", sumGot, bound)
				if sumGot < bound {
					t.Errorf("busy threads: %.0f samples for %.0f expected, want ≥ %.0f", sumGot, sumWant, bound)
				}
			}
		})
	}
}

// TestSystemWide: record -a while the known split runs, with a command
// (-a -- CMD ends with it): the split's process is there with its shares
// right, other processes are there too, kernel threads are not (without
// -k), and gprof itself is not.
func TestSystemWide(t *testing.T) {
	split := buildC(t, "split")
	dir := t.TempDir()
	out, sum := filepath.Join(dir, "p.json.gz"), filepath.Join(dir, "summary.json")
	// Another process that runs throughout: it must be in the profile.
	other := exec.Command("sh", "-c", "while :; do :; done")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	r := gprof(t, "record", "-q", "-a", "-o", out, "--json-output", sum, "--", split, "1", "2")
	if r.code != 0 && os.Geteuid() != 0 && strings.Contains(r.stderr, "-a") {
		t.Skipf("system-wide recording is not permitted to this user: %s", r.stderr)
	}
	skipIfNoPerf(t, r)
	if r.code != 0 {
		t.Fatalf("record -a: exit %d: %s", r.code, r.stderr)
	}
	p, err := gecko.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	pids := map[int]string{}
	for _, pr := range p.Processes {
		pids[pr.Pid] = pr.Name
		if pr.Pid == 2 || parentOf(pr.Pid) == 2 {
			t.Errorf("kernel thread %s (pid %d) recorded without -k", pr.Name, pr.Pid)
		}
	}
	if _, ok := pids[other.Process.Pid]; !ok {
		t.Errorf("the loop beside it (pid %d) is missing from a system-wide profile: %v", other.Process.Pid, pids)
	}
	rep := reportThreads(t, out)
	var splitPid int
	for pid, name := range pids {
		if name == "split" {
			splitPid = pid
		}
	}
	if splitPid == 0 {
		t.Fatalf("no split process in %v", pids)
	}
	// The known split, over split's own samples.
	var total float64
	shares := map[string]float64{}
	for _, th := range rep.Threads {
		if th.Pid != splitPid {
			continue
		}
		for _, f := range th.TopSelf {
			shares[f.Name] += float64(f.SelfSamples)
			total += float64(f.SelfSamples)
		}
	}
	if total < 1000 {
		t.Fatalf("split got %.0f samples, want about 2000", total)
	}
	for fn, want := range map[string]float64{"work_a": 0.5, "work_b": 0.3, "work_c": 0.2} {
		got := shares[fn] / total
		bound := 5*math.Sqrt(want*(1-want)/total) + 0.01
		margin(t, fn+" share error", math.Abs(got-want), bound)
		if math.Abs(got-want) > bound {
			t.Errorf("%s: %.3f of split's samples, want %.2f ± %.3f", fn, got, want, bound)
		}
	}
	var s struct {
		Layout string `json:"event_layout"`
	}
	data, _ := os.ReadFile(sum)
	json.Unmarshal(data, &s)
	if s.Layout != "per-cpu" {
		t.Errorf("summary event_layout %q, want per-cpu", s.Layout)
	}
}

// TestSystemWideRefused: -a where it cannot be done says so in one line.
func TestSystemWideRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"record", "-a", "--backend", "ptrace", "-d", "1"}, "cannot record system-wide"},
		{[]string{"record", "-a", "-p", "1", "-d", "1"}, "without -p"},
	} {
		r := gprof(t, tc.args...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want one line saying %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
