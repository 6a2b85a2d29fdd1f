//go:build linux

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/record/perfdata"
)

// Events beyond CPU time (docs/events.md): programs with known numbers of
// page faults, file opens, context switches, probe hits and marked phases
// (testdata/events.c), recorded with each event and held to the count the
// program made and to perf record's on the same program.

// eventReport is what these tests read of 'report --json': the samples
// (weighted: events) of each function.
type eventReport struct {
	Samples int64 `json:"samples"`
	All     struct {
		TopSelf []struct {
			Name string `json:"name"`
			Self int64  `json:"self_samples"`
		} `json:"top_self"`
		TopTotal []struct {
			Name  string `json:"name"`
			Total int64  `json:"total_samples"`
		} `json:"top_total"`
	} `json:"all"`
}

func (r eventReport) total(fn string) int64 {
	for _, f := range r.All.TopTotal {
		if f.Name == fn {
			return f.Total
		}
	}
	return 0
}

func eventReportOf(t *testing.T, path string, args ...string) eventReport {
	t.Helper()
	r := gprof(t, append([]string{"report", "--json", "--top", "-1"}, append(args, path)...)...)
	if r.code != 0 {
		t.Fatalf("gprof report %v: exit %d: %s", args, r.code, r.stderr)
	}
	var rep eventReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report --json: %v", err)
	}
	return rep
}

// perfCount records cmd with perf record -e event -c 1 (stacks as
// callGraph says: fp or dwarf) and counts the samples of the command's
// process, and those whose stack has function fn ("" for none); data is
// perf's file. all is -1 where perf 6.1 aborted reading each file it
// wrote (its build-id code; logged): the tests then hold gprof to the
// program's own counts, and gprof's reading of perf's file to them.
func perfCount(t *testing.T, event, callGraph, fn string, cmd ...string) (all, inFn int, output, data string) {
	t.Helper()
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed (apt-get install linux-perf)")
	}
	out := filepath.Join(t.TempDir(), "perf.data")
	// perf 6.1 aborts now and then in its build-id code (an assertion in
	// util/build-id.c, then "stack smashing detected"), in perf record
	// as it ends or in perf script on the file; each such run of perf is
	// logged and the whole run made again.
	var b []byte
	for try := 1; ; try++ {
		// -m 4096: a ring of 16 MiB a CPU, gprof's for such events,
		// which keeps a burst of stack copies. -B: no build-ids
		// collected as perf record ends, where it aborts most.
		pr := exec.Command("perf", append([]string{"record", "-q", "-B", "-m", "4096", "-o", out, "-e", event, "-c", "1", "--call-graph", callGraph, "--"}, cmd...)...)
		ob, err := pr.CombinedOutput()
		if err == nil {
			output = string(ob)
			b, err = exec.Command("perf", "script", "-i", out, "-F", "comm,ip,sym").Output()
			if err == nil {
				break
			}
			err = fmt.Errorf("perf script: %w", err)
		} else if s := string(ob); strings.Contains(s, "perf_event_paranoid") || strings.Contains(s, "Permission") {
			t.Skipf("perf record cannot sample here: %s", firstLine(s))
		}
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != -1 {
			t.Fatalf("perf %s: %v\n%s", event, err, ob)
		}
		t.Logf("perf on %s aborted (try %d): %v", event, try, err)
		if try == 3 {
			if output == "" {
				t.Fatalf("perf record %s aborted on every try", event)
			}
			return -1, -1, output, out
		}
	}
	name := filepath.Base(cmd[0])
	for _, block := range strings.Split(string(b), "\n\n") {
		if !strings.HasPrefix(strings.TrimSpace(block), name) {
			continue // perf itself, before it execs the command
		}
		all++
		if fn != "" && regexp.MustCompile(`\s`+fn+`\b`).MatchString(block) {
			inFn++
		}
	}
	return all, inFn, output, out
}

// perfDataCount reads perf's file as gprof does (gprof convert) and
// counts the samples of event of the processes named name, and the
// events report finds in function fn.
func perfDataCount(t *testing.T, data, name, event, fn string) (all, inFn int64) {
	t.Helper()
	conv := filepath.Join(t.TempDir(), "perf.json.gz")
	if r := gprof(t, "convert", "--to", "gecko", "-o", conv, data); r.code != 0 {
		t.Fatalf("gprof convert %s: exit %d: %s", data, r.code, r.stderr)
	}
	p, err := gecko.ReadFile(conv)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Meta.Extra["event"]; got != event {
		t.Errorf("perf's file converts with event %q, want %q", got, event)
	}
	if fn != "" {
		inFn = eventReportOf(t, data).total(fn)
	}
	return processSamples(p, name, ""), inFn
}

// processSamples is how many samples (weighted: events) the threads of
// processes named name have in table event of p ("" for their own).
func processSamples(p *profile.Profile, name, event string) int64 {
	var n int64
	for _, pr := range p.Processes {
		if pr.Name != name {
			continue
		}
		for _, th := range pr.Threads {
			t := &th.Samples
			for i := range th.Events {
				if th.Events[i].Event == event {
					t = &th.Events[i].Samples
				}
			}
			for i := range t.Stack {
				if t.Weight != nil {
					n += int64(t.Weight[i])
				} else {
					n++
				}
			}
		}
	}
	return n
}

// ensureTracefs mounts tracefs where it is not (as root), for the test's
// length: tracepoints need it, and a fresh machine may not have it.
func ensureTracefs(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/kernel/tracing/events"); err == nil {
		return
	}
	if _, err := os.Stat("/sys/kernel/debug/tracing/events"); err == nil {
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("tracefs is not mounted, and mounting it needs root")
	}
	if err := syscall.Mount("nodev", "/sys/kernel/tracing", "tracefs", 0, ""); err != nil {
		t.Skipf("tracefs cannot be mounted here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount("/sys/kernel/tracing", 0) })
}

// TestEventPageFaults: every fresh page a program touches is one page
// fault; -e page-faults -c 1 makes each a sample with its stack.
func TestEventPageFaults(t *testing.T) {
	bin := buildC(t, "events")
	const pages = 3000
	// Frame pointers: the fault is in touch_pages itself, the sample's
	// leaf; and 3000 faults in a millisecond with a 16 KiB stack copy
	// each is more than a ring holds (dwarf mode loses some, as perf's).
	rec := mustRecord(t, "--call-graph", "fp", "-e", "page-faults", "-c", "1", "--", bin, "faults", strconv.Itoa(pages))
	if got := rec.profile.Meta.Extra["event"]; got != "page-faults" {
		t.Errorf("event %q, want page-faults", got)
	}
	if !strings.Contains(rec.stdout, fmt.Sprintf("touched %d pages", pages)) {
		t.Errorf("the program says %q", rec.stdout)
	}
	got := eventReportOf(t, rec.out).total("touch_pages")
	all, peer, _, data := perfCount(t, "page-faults", "fp", "touch_pages", bin, "faults", strconv.Itoa(pages))
	dall, dpeer := perfDataCount(t, data, "events", "page-faults", "touch_pages")
	t.Logf("page faults in touch_pages: gprof %d of %d, perf %d of %d, gprof reading perf's file %d of %d, program %d", got, processSamples(rec.profile, "events", ""), peer, all, dpeer, dall, pages)
	if all >= 0 && (dall != int64(all) || dpeer != int64(peer)) || dpeer != pages {
		t.Errorf("gprof reads %d page faults (%d in touch_pages) in perf's file, perf script %d (%d), the program made %d", dall, dpeer, all, peer, pages)
	}
	if got != pages {
		t.Errorf("gprof counts %d page faults in touch_pages, the program made %d", got, pages)
	}
	if all >= 0 && peer != pages {
		t.Errorf("perf counts %d page faults in touch_pages, the program made %d", peer, pages)
	}
	// The front-end counts every fault on the program's track.
	want := processSamples(rec.profile, "events", "")
	for _, v := range frontEnd(t, rec.out) {
		if got := v.samples("GeckoMain"); got != want {
			t.Errorf("the front-end counts %d page-fault samples on the program's track, the profile has %d", got, want)
		}
	}
}

// TestEventOpenat: a syscall tracepoint samples every call, with its
// fields as a marker; beside CPU time, on a track of its own.
func TestEventOpenat(t *testing.T) {
	ensureTracefs(t)
	bin := buildC(t, "events")
	const opens = 500
	rec := mustRecord(t, "-e", "cpu-clock,syscalls:sys_enter_openat", "--", bin, "opens", strconv.Itoa(opens))
	got := eventReportOf(t, rec.out, "--event", "syscalls:sys_enter_openat").total("open_files")
	gall := processSamples(rec.profile, "events", "syscalls:sys_enter_openat")
	// perf with frame pointers, and only its count compared: perf 6.1's
	// perf script aborts on its dwarf recordings of this program (an
	// assertion in util/build-id.c, then "stack smashing detected"), and
	// the frame pointers the kernel walks miss open_files (libc's open
	// keeps none, so its caller's frame is skipped).
	all, _, _, data := perfCount(t, "syscalls:sys_enter_openat", "fp", "", bin, "opens", strconv.Itoa(opens))
	dall, _ := perfDataCount(t, data, "events", "syscalls:sys_enter_openat", "")
	t.Logf("openat calls: gprof %d in open_files of %d (lost %d), perf %d, gprof reading perf's file %d, program %d in open_files", got, gall, rec.profile.Meta.LostEvents, all, dall, opens)
	if all >= 0 && dall != int64(all) || dall < opens {
		t.Errorf("gprof reads %d openat calls in perf's file, perf script %d, the program made %d", dall, all, opens)
	}
	if got != opens {
		t.Errorf("gprof counts %d openat calls in open_files, the program made %d", got, opens)
	}
	// The loader's opens are the same few each run.
	if gall != dall {
		t.Errorf("the program made %d openat calls for gprof, %d for perf", gall, all)
	}
	markers := 0
	for _, pr := range rec.profile.Processes {
		for _, th := range pr.Threads {
			for _, m := range th.Markers {
				if m.Name == "syscalls:sys_enter_openat" && m.Cause > 0 && strings.Contains(fmt.Sprint(m.Data["fields"]), "filename=0x") {
					markers++
				}
			}
		}
	}
	if markers < opens {
		t.Errorf("%d openat markers with fields and a stack, want at least %d", markers, opens)
	}
	// The front-end shows the calls as a track of their own, and as
	// markers of the program's thread whose fields it formats.
	for _, v := range frontEnd(t, rec.out) {
		if got := v.samples("events [syscalls:sys_enter_openat]"); got != gall {
			t.Errorf("the front-end counts %d openat samples on their track, the profile has %d", got, gall)
		}
		if len(v.Views) == 0 || v.Views[0].Markers < opens || v.Views[0].Formatted < opens {
			t.Errorf("the front-end derives markers %+v, want at least %d openat markers with their fields", v.Views, opens)
		}
	}
	// The first event is still CPU time, the threads' own samples.
	if rec.profile.Meta.Extra["event"] != "cpu-clock" || rec.profile.Meta.Extra["events"] != "cpu-clock,syscalls:sys_enter_openat" {
		t.Errorf("events %q %q", rec.profile.Meta.Extra["event"], rec.profile.Meta.Extra["events"])
	}
}

// TestEventContextSwitches: two threads that hand a byte back and forth
// over pipes switch out at every read; the program counts its threads'
// switches (getrusage), and every one is a sample.
func TestEventContextSwitches(t *testing.T) {
	bin := buildC(t, "events")
	const rounds = 2000
	// Frame pointers: 4000 switches in some 20 ms, each with a 16 KiB
	// stack copy in dwarf mode, fill a ring before gprof's reader is
	// under way (see docs/events.md).
	rec := mustRecord(t, "--call-graph", "fp", "-e", "context-switches", "-c", "1", "--", bin, "switches", strconv.Itoa(rounds))
	m := regexp.MustCompile(`switches ping (\d+) pong (\d+)`).FindStringSubmatch(rec.stdout)
	if m == nil {
		t.Fatalf("the program did not say its switches: %q", rec.stdout)
	}
	ping, _ := strconv.Atoi(m[1])
	pong, _ := strconv.Atoi(m[2])
	got := processSamples(rec.profile, "events", "")
	want := int64(ping + pong)
	all, _, pout, data := perfCount(t, "context-switches", "fp", "", bin, "switches", strconv.Itoa(rounds))
	dall, _ := perfDataCount(t, data, "events", "context-switches", "")
	if all >= 0 && dall != int64(all) {
		t.Errorf("gprof reads %d context switches of the program in perf's file, perf script %d", dall, all)
	}
	if all < 0 {
		all = int(dall) // perf script aborted: gprof's reading of perf's file
	}
	pm := regexp.MustCompile(`switches ping (\d+) pong (\d+)`).FindStringSubmatch(pout)
	if pm == nil {
		t.Fatalf("the program did not tell perf's run its switches: %q", pout)
	}
	pping, _ := strconv.Atoi(pm[1])
	ppong, _ := strconv.Atoi(pm[2])
	pwant := int64(pping + ppong)
	t.Logf("context switches of the program: gprof %d (lost %d), the program %d (ping %d, pong %d, between its getrusage calls); perf %d, the program %d on that run",
		got, rec.profile.Meta.LostEvents, want, ping, pong, all, pwant)
	// getrusage counts the switches between its calls; the samples take
	// those before and after them too (start-up, thread start and join):
	// a few more.
	for _, c := range []struct {
		who       string
		got, want int64
	}{{"gprof", got, want}, {"perf", int64(all), pwant}} {
		margin(t, c.who+"'s switches over the program's, less 1", float64(c.got)/float64(c.want)-1, 0.05)
		if c.got < c.want || float64(c.got) > float64(c.want)*1.05+20 {
			t.Errorf("%s counts %d switches of the program, the program %d", c.who, c.got, c.want)
		}
	}
}

// TestEventUSDT: a USDT probe with a semaphore: gprof makes the probe
// for the recording (the kernel sets the semaphore while it is on), and
// every pass is a sample.
func TestEventUSDT(t *testing.T) {
	bin := buildC(t, "events")
	const ticks = 200
	for _, how := range [][]string{{"-e", "sdt_gprof_test:tick"}, {"--probe", bin + ":sdt_gprof_test:tick"}} {
		out := filepath.Join(t.TempDir(), "usdt.json.gz")
		r := gprof(t, append(append([]string{"record", "-o", out}, how...), "--", bin, "usdt", strconv.Itoa(ticks))...)
		skipIfNoPerf(t, r)
		if r.code != 0 {
			if strings.Contains(r.stderr, "uprobe PMU") {
				t.Skipf("no uprobes here: %s", r.stderr)
			}
			t.Fatalf("record %v: %d %s", how, r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, fmt.Sprintf("ticks %d semaphore_set %d", ticks, ticks)) {
			t.Errorf("%v: the semaphore was not set at every pass: %q", how, r.stdout)
		}
		if got := eventReportOf(t, out, "--event", "sdt_gprof_test:tick").total("ticks"); got != ticks {
			t.Errorf("%v: %d probe hits in ticks, want %d", how, got, ticks)
		}
	}
	// Nothing is left behind in tracefs.
	if b, err := os.ReadFile("/sys/kernel/tracing/uprobe_events"); err == nil && strings.Contains(string(b), "gprof") {
		t.Errorf("uprobe_events holds gprof's probes after the recording: %s", b)
	}
}

// TestEventMarkers: a program's marker file (samply's convention) gives
// markers on the thread that mapped it, and report --during-marker counts
// the samples inside them.
func TestEventMarkers(t *testing.T) {
	bin := buildC(t, "events")
	dir := t.TempDir()
	rec := mustRecord(t, "--", bin, "phases", "300", "150", dir)
	spans := map[string]profile.Marker{}
	for _, pr := range rec.profile.Processes {
		for _, th := range pr.Threads {
			for _, m := range th.Markers {
				if d, _ := m.Data["type"].(string); d == profile.MarkerFileType {
					if !th.Main {
						t.Errorf("marker %s on thread %d, not the main thread that mapped the file", m.Name, th.Tid)
					}
					spans[m.Name] = m
				}
			}
		}
	}
	s, p := spans["serial"], spans["parallel"]
	if s.Name == "" || p.Name == "" {
		t.Fatalf("markers %v, want serial and parallel", spans)
	}
	mt := regexp.MustCompile(`serial_wall_ns (\d+) parallel_wall_ns (\d+)`).FindStringSubmatch(rec.stdout)
	if mt == nil {
		t.Fatalf("no phase times in %q", rec.stdout)
	}
	sw, _ := strconv.ParseInt(mt[1], 10, 64)
	pw, _ := strconv.ParseInt(mt[2], 10, 64)
	if s.End-s.Start != sw || p.End-p.Start != pw || p.Start != s.End {
		t.Errorf("marker spans %d, %d ns (parallel from %d, serial to %d); the program's phases took %d, %d ns", s.End-s.Start, p.End-p.Start, p.Start, s.End, sw, pw)
	}
	during := eventReportOf(t, rec.out, "--during-marker", "serial")
	if n := during.total("parallel_phase"); n != 0 {
		t.Errorf("%d samples in parallel_phase during the serial marker", n)
	}
	if n := during.total("serial_phase") + during.total("spin_cpu"); n < 100 {
		t.Errorf("%d samples in serial_phase during the serial marker, want most of its 300 ms", n)
	}
	for _, v := range frontEnd(t, rec.out) {
		if len(v.Views) == 0 || v.Views[0].Markers < 2 {
			t.Errorf("the front-end derives markers %+v, want the two phases on the main thread", v.Views)
		}
	}
	r := gprof(t, "report", "--during-marker", "nosuch", rec.out)
	if r.code != 2 || !strings.Contains(r.stderr, "parallel, serial") {
		t.Errorf("--during-marker nosuch: exit %d %q", r.code, r.stderr)
	}
}

// TestEventErrors: what cannot be sampled is one line that says what to
// type or grant.
func TestEventErrors(t *testing.T) {
	bin := buildC(t, "events")
	for _, c := range []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"-e", "page-fault"}, 2, "did you mean page-faults"},
		{[]string{"-e", "sched:no_such_tracepoint"}, 1, "available_events"},
		{[]string{"--probe", bin + ":no_such_function"}, 1, "no function no_such_function"},
		{[]string{"-e", "sdt_gprof_test:no_such_probe"}, 1, "--probe BIN:"},
		{[]string{"-e", "cpu-clock/period=0/"}, 2, "period=N"},
	} {
		ensureTracefs(t)
		r := gprof(t, append(append([]string{"record", "-o", filepath.Join(t.TempDir(), "x.json.gz")}, c.args...), "--", bin, "opens", "1")...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != c.code || len(lines) != 1 || !strings.Contains(r.stderr, c.mention) {
			t.Errorf("record %v: exit %d, stderr %q; want exit %d and one line saying %q", c.args, r.code, r.stderr, c.code, c.mention)
		}
	}
	// A kernel without kprobes (this VM's) says so in one line; one
	// with them records.
	r := gprof(t, "record", "-o", filepath.Join(t.TempDir(), "k.json.gz"), "--probe", "do_sys_openat2", "--", bin, "opens", "1")
	if _, err := os.Stat("/sys/bus/event_source/devices/kprobe"); err != nil {
		if r.code != 1 || !strings.Contains(r.stderr, "no kprobe PMU") {
			t.Errorf("--probe on a kernel without kprobes: exit %d %q", r.code, r.stderr)
		}
	} else if r.code != 0 {
		t.Errorf("--probe do_sys_openat2: exit %d %q", r.code, r.stderr)
	}
	// Without a hardware PMU, cycles is one notice, and cpu-clock
	// samples instead.
	if _, err := os.Stat("/sys/bus/event_source/devices/cpu"); err != nil {
		rec := mustRecord(t, "-e", "cycles", "--", bin, "faults", "10")
		if !strings.Contains(rec.stderr, "no hardware PMU") || rec.profile.Meta.Extra["event"] != "cpu-clock" {
			t.Errorf("-e cycles without a PMU: event %q, stderr %q", rec.profile.Meta.Extra["event"], rec.stderr)
		}
	}
}

// TestLatency: perf 6.15's latency view on a program with a serial phase
// (one thread) and a parallel one (four threads), recorded at once by
// perf (cpu-clock and context switches, as perf record --latency) and by
// gprof record --latency attached to it: gprof's shares of the two
// phases are held to those the test computes from perf's records by
// perf's definition (each sample weighs 1/the threads on a CPU then).
// The perf installed may predate --latency (6.15); the switch records
// are what it uses.
func TestLatency(t *testing.T) {
	bin := buildC(t, "events")
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed")
	}
	dir := t.TempDir()
	goFile := filepath.Join(dir, "go")
	perfData := filepath.Join(dir, "perf.data")
	pc := exec.Command("perf", "record", "-q", "-B", "-e", "cpu-clock", "-c", "1000000", "--switch-events", "-o", perfData, "--", bin, "phases", "600", "300", dir)
	pc.Env = append(os.Environ(), "EVENTS_WAIT="+goFile)
	var pout strings.Builder
	pc.Stdout, pc.Stderr = &pout, &pout
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	defer pc.Process.Kill()
	// The program is perf's child, waiting for goFile; attached once it
	// is the program (perf's fork execs it when perf is ready), or the
	// profile has perf's image of the pid too.
	var pid int
	for i := 0; i < 500 && pid == 0; i++ {
		if kids := childrenOf(pc.Process.Pid); len(kids) > 0 {
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", kids[0])); exe == bin {
				pid = kids[0]
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatalf("perf started no program: %s", pout.String())
	}
	out := filepath.Join(dir, "p.json.gz")
	g := startGprof(t, io.Discard, "record", "--latency", "-o", out, "-p", strconv.Itoa(pid))
	time.Sleep(1500 * time.Millisecond) // attached, sampling
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := pc.Wait(); err != nil {
		t.Fatalf("perf record: %v: %s", err, pout.String())
	}
	if !g.exited(30 * time.Second) {
		t.Fatal("gprof did not end with its target")
	}
	if code := g.cmd.ProcessState.ExitCode(); code != 0 {
		skipIfNoBackend(t, g.stderr.String())
		t.Fatalf("gprof record: %d %s", code, g.stderr.String())
	}

	// perf's definition (tools/perf/util/machine.c, event.c in 6.15),
	// from perf's records of the program (read with gprof's perf.data
	// reader: perf 6.1's perf script aborts on these files now and then,
	// in its build-id code): its threads on a CPU are its
	// switches in less its switches out and exits, at least 1 and at most
	// the CPUs; each sample of the main thread (the serial phase) or a worker
	// (the parallel one) weighs 1 over that count.
	data, err := os.ReadFile(perfData)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := perfdata.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	running := 1 // perf starts at 1: there is no first switch in
	var serial, parallel, serialCPU, parallelCPU float64
	for _, e := range pf.Events {
		switch e := e.(type) {
		case *event.Switch:
			if e.Pid != pid {
				continue
			}
			if e.Out {
				running--
			} else {
				running++
			}
		case *event.Exit:
			// A thread's last switch out, as it exits, has no record.
			if e.Pid == pid {
				running--
			}
		case *event.Sample:
			if e.Pid != pid {
				continue
			}
			w := 1 / float64(max(1, min(running, runtime.NumCPU())))
			if e.Tid == pid {
				serial += w
				serialCPU++
			} else {
				parallel += w
				parallelCPU++
			}
		}
	}
	if serialCPU < 100 || parallelCPU < 100 {
		t.Fatalf("perf sampled %v serial and %v parallel ms: too few to compare", serialCPU, parallelCPU)
	}
	perfLat := 100 * serial / (serial + parallel)
	perfCPU := 100 * serialCPU / (serialCPU + parallelCPU)

	r := gprof(t, "report", "--latency", "--json", "--top", "-1", out)
	if r.code != 0 {
		t.Fatalf("report --latency: %d %s", r.code, r.stderr)
	}
	var l struct {
		Samples  int64 `json:"samples"`
		TopTotal []struct {
			Name       string  `json:"name"`
			LatencyPct float64 `json:"latency_pct"`
			CPUPct     float64 `json:"cpu_pct"`
		} `json:"top_total"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
		t.Fatal(err)
	}
	shares := map[string][2]float64{}
	for _, f := range l.TopTotal {
		shares[f.Name] = [2]float64{f.LatencyPct, f.CPUPct}
	}
	s, p := shares["serial_phase"], shares["parallel_phase"]
	gLat := 100 * s[0] / (s[0] + p[0])
	gCPU := 100 * s[1] / (s[1] + p[1])
	t.Logf("serial phase's share: latency gprof %.1f%%, perf's definition on perf's samples %.1f%%; CPU gprof %.1f%%, perf %.1f%% (%d gprof samples, %v perf)",
		gLat, perfLat, gCPU, perfCPU, l.Samples, serialCPU+parallelCPU)
	// Two samplings of one run: each share varies by sqrt(p(1-p)/N).
	n := math.Min(float64(l.Samples), serialCPU+parallelCPU)
	bound := 100 * 4 * math.Sqrt(0.25/n)
	margin(t, "|gprof - perf| latency share of the serial phase (points)", math.Abs(gLat-perfLat), bound)
	margin(t, "|gprof - perf| CPU share of the serial phase (points)", math.Abs(gCPU-perfCPU), bound)
	if math.Abs(gLat-perfLat) > bound || math.Abs(gCPU-perfCPU) > bound {
		t.Errorf("serial phase: gprof latency %.1f%% CPU %.1f%%, perf's %.1f%% %.1f%%: more apart than %.1f points", gLat, gCPU, perfLat, perfCPU, bound)
	}
	// The Parallelism counter is a track of the process's, beside its
	// threads'.
	for _, v := range frontEnd(t, out) {
		if v.Tracks.Local != len(v.Result.Threads)+1 {
			t.Errorf("the front-end makes %d local tracks for %d threads (%+v), want one more: the Parallelism counter", v.Tracks.Local, len(v.Result.Threads), v.Result.Threads)
		}
	}
	// The serial phase ran alone: its share of the latency is larger
	// than its share of the CPU, wherever the workers ran side by side.
	if perfLat > perfCPU+1 && gLat <= gCPU {
		t.Errorf("serial phase: latency share %.1f%% not above its CPU share %.1f%%", gLat, gCPU)
	}
}

// frontEndView is what these tests read of the front-end checker's
// summary: each thread as the front-end imported it, its derived views,
// the tracks it made and what went wrong.
type frontEndView struct {
	Result struct {
		Threads []struct {
			Name    string `json:"name"`
			Samples int64  `json:"samples"`
			Markers int    `json:"markers"`
		} `json:"thread_list"`
	} `json:"result"`
	Tracks struct {
		Local   int   `json:"local_tracks"`
		Without []any `json:"threads_without_any_track"`
	} `json:"tracks"`
	Views []struct {
		Markers   int `json:"markers_derived"`
		Formatted int `json:"marker_fields_formatted"`
	} `json:"views"`
	ViewErrors []any `json:"view_errors"`
	Structural []any `json:"oracle_structural_problems"`
	Console    []any `json:"frontend_console"`
}

// frontEnd opens path (and its processed conversion) with the Firefox
// Profiler front-end's own import and views ($GPROF_ORACLE, by default
// /work/shared/tools/oracle/oracle, see its README), strict: its integrity
// check, every panel's derived data and every thread on a track. It
// returns the summaries, or none where the checker is not at hand.
func frontEnd(t *testing.T, path string) []frontEndView {
	t.Helper()
	oracle := os.Getenv("GPROF_ORACLE")
	if oracle == "" {
		oracle = "/work/shared/tools/oracle/oracle"
	}
	if _, err := os.Stat(oracle); err != nil {
		t.Logf("no front-end checker at %s", oracle)
		return nil
	}
	conv := filepath.Join(t.TempDir(), "processed.json.gz")
	if r := gprof(t, "convert", "-o", conv, path); r.code != 0 {
		t.Fatalf("convert: exit %d: %s", r.code, r.stderr)
	}
	var views []frontEndView
	for _, p := range []string{path, conv} {
		out, err := exec.Command(oracle, "--strict", p).Output()
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 {
			t.Logf("front-end checker unusable: %s", ee.Stderr)
			return nil
		}
		if err != nil {
			t.Errorf("%s: the front-end refuses it: %v\n%s", filepath.Base(p), err, out)
			continue
		}
		var v frontEndView
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("front-end checker: %v", err)
		}
		if len(v.ViewErrors)+len(v.Structural)+len(v.Console)+len(v.Tracks.Without) > 0 {
			t.Errorf("%s: front-end view errors %v, structural problems %v, console %v, threads without a track %v",
				filepath.Base(p), v.ViewErrors, v.Structural, v.Console, v.Tracks.Without)
		}
		views = append(views, v)
	}
	return views
}

// frontEndSamples is the samples the front-end counts on the thread
// named name, -1 where it has none of that name.
func (v frontEndView) samples(name string) int64 {
	for _, th := range v.Result.Threads {
		if th.Name == name {
			return th.Samples
		}
	}
	return -1
}

// lockedBuffer is a program's output, read while it writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// textByte reads the byte at a function's entry in a running process's
// memory, where a uprobe puts its breakpoint (0xcc), and the byte the
// file has there.
func textByte(t *testing.T, bin, fn string, pid int) (mem, file byte) {
	t.Helper()
	f, err := objfile.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var addr uint64
	for _, s := range syms {
		if s.Name == fn {
			addr = s.Addr
		}
	}
	off, ok := f.FileOffset(addr)
	if addr == 0 || !ok {
		t.Fatalf("%s has no %s", bin, fn)
	}
	raw, _ := os.ReadFile(bin)
	// The mapping of the file's offset 0 is where the file is loaded. A
	// program just started may not show it yet: the parent goes on once
	// the child's exec has dropped its old memory, before the kernel has
	// mapped the new file (under load, a read of its memory at the
	// unrelocated address failed with EIO once in 49 runs).
	var base uint64
	found := false
	for deadline := time.Now().Add(5 * time.Second); !found && time.Now().Before(deadline); {
		maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
		for _, l := range strings.Split(string(maps), "\n") {
			fs := strings.Fields(l)
			if len(fs) == 6 && fs[5] == bin && fs[2] == "00000000" {
				base, _ = strconv.ParseUint(strings.Split(fs[0], "-")[0], 16, 64)
				found = true
				break
			}
		}
		if !found {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if !found {
		t.Fatalf("%d never mapped %s", pid, bin)
	}
	// Less the address the file's offset 0 is linked at (0 for a PIE).
	for _, sg := range f.Segments() {
		if sg.Offset == 0 {
			base -= sg.Addr
		}
	}
	m, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b := make([]byte, 1)
	if _, err := m.ReadAt(b, int64(base+addr)); err != nil {
		t.Fatalf("reading %s of %d: %v", fn, pid, err)
	}
	return b[0], raw[off]
}

// TestEventProbesGoWithGprof: the probes gprof makes for a recording (a
// program probe, and a USDT probe with its semaphore) are gone when gprof
// is, however it ends: SIGINT and SIGTERM end the recording and write it,
// SIGKILL leaves nothing to write. The program keeps running after gprof
// and says whether the semaphore is still set; its memory says whether the
// breakpoint is still at the probed function; tracefs lists nothing.
func TestEventProbesGoWithGprof(t *testing.T) {
	bin := buildC(t, "events")
	if _, err := os.Stat("/sys/bus/event_source/devices/uprobe"); err != nil {
		t.Skip("no uprobe PMU here")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			stop, out := filepath.Join(dir, "stop"), filepath.Join(dir, "p.json.gz")
			prog := exec.Command(bin, "usdt", "0")
			prog.Env = append(os.Environ(), "EVENTS_STOP="+stop)
			var said lockedBuffer
			prog.Stdout = &said
			if err := prog.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			var waitErr error
			go func() { waitErr = prog.Wait(); close(exited) }()
			defer func() {
				os.WriteFile(stop, nil, 0o644)
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					prog.Process.Kill()
				}
			}()
			pid := prog.Process.Pid
			_, orig := textByte(t, bin, "ticks", pid)
			g := startGprof(t, io.Discard, "record", "-o", out, "--probe", bin+":sdt_gprof_test:tick", "--probe", bin+":ticks", "-p", strconv.Itoa(pid))
			on := false
			for i := 0; i < 1000 && !on; i++ {
				if g.exited(10 * time.Millisecond) {
					skipIfNoBackend(t, g.stderr.String())
					t.Fatalf("gprof ended before it was signalled: %s", g.stderr.String())
				}
				mem, _ := textByte(t, bin, "ticks", pid)
				on = strings.Contains(said.String(), "probe on") && mem == 0xcc
			}
			if !on {
				t.Fatalf("the probes never came on: the program says %q", said.String())
			}
			g.cmd.Process.Signal(sig)
			if !g.exited(30 * time.Second) {
				t.Fatalf("gprof did not end on %v", sig)
			}
			mem, _ := textByte(t, bin, "ticks", pid)
			if mem != orig {
				t.Errorf("after gprof's %v, ticks begins with %#x in the program, %#x in its file: a breakpoint left behind", sig, mem, orig)
			}
			if b, err := os.ReadFile("/sys/kernel/tracing/uprobe_events"); err == nil && len(strings.TrimSpace(string(b))) > 0 {
				t.Errorf("uprobe_events lists probes after gprof's %v: %s", sig, b)
			}
			// A few passes without the probe, then the program's own word.
			time.Sleep(50 * time.Millisecond)
			if err := os.WriteFile(stop, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
				if waitErr != nil {
					t.Errorf("the program: %v", waitErr)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the program did not end (stopped?)")
			}
			t.Logf("gprof on %v: exit %d; the program: %q", sig, g.cmd.ProcessState.ExitCode(), said.String())
			if !strings.Contains(said.String(), "last_set 0") {
				t.Errorf("after gprof's %v the semaphore is still set: %q", sig, said.String())
			}
			if sig == syscall.SIGKILL {
				return
			}
			if code := g.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("gprof on %v: exit %d, want 0 (the recording ends and is written): %s", sig, code, g.stderr.String())
			}
			rep := eventReportOf(t, out, "--event", "sdt_gprof_test:tick")
			if n := rep.total("ticks"); n < 1 {
				t.Errorf("%d USDT hits in ticks in the profile written on %v", n, sig)
			}
		})
	}
}

// TestEventErrorsUnprivileged: what a user who is not root is refused is
// one line naming the privilege to grant, not a missing mount or a
// missing event: a tracepoint (tracefs is root's alone by default, and
// its fields need CAP_PERFMON), a program probe and a USDT probe (making
// a probe needs root); and what such a user may sample still records.
func TestEventErrorsUnprivileged(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv to run gprof as nobody")
	}
	ensureTracefs(t)
	// Everything nobody runs and writes, where nobody can reach it.
	dir, err := os.MkdirTemp("", "gprof-nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	g, bin := filepath.Join(dir, "gprof"), filepath.Join(dir, "events")
	if err := copyExecutable(gprofBin, g); err != nil {
		t.Fatal(err)
	}
	if err := copyExecutable(buildC(t, "events"), bin); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, g, bin} {
		os.Chmod(p, 0o777)
	}
	for _, c := range []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"-e", "syscalls:sys_enter_openat"}, 1, "root"},
		{[]string{"--probe", bin + ":ticks"}, 1, "needs root"},
		{[]string{"-e", "sdt_gprof_test:tick"}, 1, "needs root"},
		{[]string{"-e", "page-faults"}, 0, ""},
	} {
		args := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", g, "record", "-o", filepath.Join(dir, "p.json.gz")}, c.args...)
		cmd := exec.Command(setpriv, append(args, "--", bin, "usdt", "5")...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		t.Logf("as nobody, record %v: exit %d: %s", c.args, code, stderr.String())
		if code != c.code || c.code != 0 && (len(lines) != 1 || !strings.Contains(stderr.String(), c.mention) || strings.Contains(stderr.String(), "not mounted")) {
			t.Errorf("as nobody, record %v: exit %d, stderr %q; want exit %d and one line saying %q", c.args, code, stderr.String(), c.code, c.mention)
		}
	}
}
