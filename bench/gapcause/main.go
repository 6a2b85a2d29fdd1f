//go:build linux

// Command gapcause says what kept a busy program off its CPU while gprof
// recorded it, and so what stretched the gaps between its samples in wall
// time: it records the program under the kernel's sched_switch
// tracepoint (tracefs; root) and, for each thread the program reports as
// busy, adds up the time it waited, runnable, for its CPU over the span
// of its samples, by who ran there meanwhile: gprof's real-time threads
// (the perf backend's pacers and reader, ptrace's stoppers), gprof's
// other threads, the program's other threads, or anything else. Each
// gap between two samples longer than -gap intervals is put down to
// whoever took most of that gap, or to none when the thread ran all
// along (its samples were spaced so).
//
//	go build -o /tmp/gapcause ./bench/gapcause
//	gcc -O2 -pthread -o /tmp/brief testdata/brief.c
//	/tmp/gapcause -runs 8 -- /tmp/brief 64 2
//
// The program must print "thread TID cpu_ns N" for each busy thread, as
// testdata/brief.c and hop.c do. Arguments after -record go to gprof
// record (-record '--backend ptrace').
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

const tracefs = "/sys/kernel/tracing"

func main() {
	runs := flag.Int("runs", 8, "recordings")
	gprof := flag.String("gprof", "./bin/gprof", "gprof to run")
	record := flag.String("record", "", "more arguments for gprof record, space-separated")
	gap := flag.Float64("gap", 2, "a gap longer than this many intervals is counted")
	flag.Parse()
	prog := flag.Args()
	if len(prog) == 0 {
		fmt.Fprintln(os.Stderr, "usage: gapcause [-runs N] [-gprof PATH] [-record ARGS] [-gap K] -- PROGRAM [ARGS...]")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "gapcause")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(dir)
	var all tally
	for r := range *runs {
		var t tally
		if err := run(&t, *gprof, strings.Fields(*record), prog, dir, *gap); err != nil {
			fatal(err)
		}
		fmt.Printf("run %d: %s\n", r+1, t.String())
		all.add(t)
	}
	fmt.Printf("all %d runs: %s\n", *runs, all.String())
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "gapcause:", err)
	os.Exit(1)
}

// tally is the off-CPU time of the busy threads by who took their CPU,
// and their long gaps by who took most of each.
type tally struct {
	threads int
	off     map[string]float64 // ms
	gaps    map[string]int
}

func (t *tally) add(o tally) {
	t.threads += o.threads
	for k, v := range o.off {
		t.note(k, v)
	}
	for k, v := range o.gaps {
		if t.gaps == nil {
			t.gaps = map[string]int{}
		}
		t.gaps[k] += v
	}
}

func (t *tally) note(who string, ms float64) {
	if t.off == nil {
		t.off = map[string]float64{}
	}
	t.off[who] += ms
}

func (t tally) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d threads; off their CPU, ms a thread:", t.threads)
	for _, k := range sortedKeys(t.off, func(k string) float64 { return t.off[k] }) {
		fmt.Fprintf(&b, " %s %.2f,", k, t.off[k]/float64(max(t.threads, 1)))
	}
	n := 0
	for _, v := range t.gaps {
		n += v
	}
	fmt.Fprintf(&b, " long gaps %d:", n)
	for _, k := range sortedKeys(t.gaps, func(k string) float64 { return float64(t.gaps[k]) }) {
		fmt.Fprintf(&b, " %s %d,", k, t.gaps[k])
	}
	return strings.TrimSuffix(b.String(), ",")
}

func sortedKeys[V any](m map[string]V, by func(string) float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return by(keys[i]) > by(keys[j]) })
	return keys
}

func writeTrace(name, value string) error {
	return os.WriteFile(filepath.Join(tracefs, name), []byte(value), 0)
}

// run records prog once under the tracepoint and adds what it found to t.
func run(t *tally, gprof string, extra, prog []string, dir string, gap float64) error {
	if _, err := os.Stat(filepath.Join(tracefs, "events")); err != nil {
		return fmt.Errorf("tracefs is not at %s (mount -t tracefs nodev %s; root)", tracefs, tracefs)
	}
	// The clock in force shows in brackets: "[local] global mono ...".
	oldClock := "local"
	if b, err := os.ReadFile(filepath.Join(tracefs, "trace_clock")); err == nil {
		if _, rest, ok := strings.Cut(string(b), "["); ok {
			oldClock, _, _ = strings.Cut(rest, "]")
		}
	}
	oldOn := "1"
	if b, err := os.ReadFile(filepath.Join(tracefs, "tracing_on")); err == nil {
		oldOn = strings.TrimSpace(string(b))
	}
	// The per-CPU buffer's size, which the trace enlarges: given back
	// (and the trace with it) after.
	oldSize := ""
	if b, err := os.ReadFile(filepath.Join(tracefs, "buffer_size_kb")); err == nil {
		oldSize = strings.TrimSpace(string(b))
	}
	restore := func() {
		writeTrace("tracing_on", oldOn)
		writeTrace("events/sched/sched_switch/enable", "0")
		writeTrace("trace_clock", oldClock)
		writeTrace("trace", "")
		if _, err := strconv.Atoi(oldSize); err == nil {
			writeTrace("buffer_size_kb", oldSize)
		}
	}
	defer restore()
	// Interrupted (Ctrl-C reaches gprof too, which stops its recording),
	// the tracepoint is turned off all the same.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, unix.SIGTERM)
	defer signal.Stop(sigs)
	var cmd *exec.Cmd
	started := make(chan struct{})
	go func() {
		if _, ok := <-sigs; ok {
			select {
			case <-started:
				// gprof ends its recording (and the command it
				// launched) as it does at Ctrl-C.
				cmd.Process.Signal(os.Interrupt)
			default:
			}
			restore()
			os.RemoveAll(dir)
			os.Exit(130)
		}
	}()
	for _, s := range [][2]string{{"tracing_on", "0"}, {"trace", ""}, {"trace_clock", "mono"}, {"buffer_size_kb", "16384"}, {"events/sched/sched_switch/enable", "1"}} {
		if err := writeTrace(s[0], s[1]); err != nil {
			return err
		}
	}
	var mono unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	offset := float64(time.Now().UnixNano()-unix.TimespecToNsec(mono)) / 1e9 // wall - monotonic, s
	if err := writeTrace("tracing_on", "1"); err != nil {
		return err
	}
	out := filepath.Join(dir, "p.json")
	args := append(append([]string{"record", "-o", out}, extra...), "--")
	cmd = exec.Command(gprof, append(args, prog...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Start()
	if err == nil {
		close(started)
		err = cmd.Wait()
	}
	writeTrace("tracing_on", "0")
	if err != nil {
		return fmt.Errorf("%s: %v: %s", gprof, err, strings.TrimSpace(stderr.String()))
	}
	busy := map[int]bool{}
	for _, m := range regexp.MustCompile(`thread (\d+) cpu_ns \d+`).FindAllStringSubmatch(stdout.String(), -1) {
		tid, _ := strconv.Atoi(m[1])
		busy[tid] = true
	}
	samples, interval, err := readProfile(out, busy, offset)
	if err != nil {
		return err
	}
	tr, err := os.Open(filepath.Join(tracefs, "trace"))
	if err != nil {
		return err
	}
	defer tr.Close()
	switches, err := readSwitches(tr)
	if err != nil {
		return err
	}
	for tid, times := range samples {
		if len(times) < 2 {
			continue
		}
		t.threads++
		waits := waitsOf(tid, programComm(prog[0]), switches)
		first, last := times[0], times[len(times)-1]
		for _, w := range waits {
			if d := overlap(w.from, w.to, first, last); d > 0 {
				t.note(w.who, d*1e3)
			}
		}
		for i := 1; i < len(times); i++ {
			a, b := times[i-1], times[i]
			if (b-a)*1e3 <= gap*interval {
				continue
			}
			by := map[string]float64{}
			for _, w := range waits {
				by[w.who] += overlap(w.from, w.to, a, b)
			}
			who := "none (it ran)"
			if keys := sortedKeys(by, func(k string) float64 { return by[k] }); len(keys) > 0 && by[keys[0]] > 0 {
				who = keys[0]
			}
			if t.gaps == nil {
				t.gaps = map[string]int{}
			}
			t.gaps[who]++
		}
	}
	return nil
}

func overlap(a, b, lo, hi float64) float64 {
	return max(0, min(b, hi)-max(a, lo))
}

// readProfile returns the sample times (monotonic seconds) of the busy
// threads, and the profile's interval in ms.
func readProfile(path string, busy map[int]bool, offset float64) (map[int][]float64, float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	type thread struct {
		Tid     json.RawMessage `json:"tid"`
		Samples struct {
			Schema map[string]int  `json:"schema"`
			Data   [][]json.Number `json:"data"`
		} `json:"samples"`
	}
	type process struct {
		Meta struct {
			StartTime float64 `json:"startTime"`
			Interval  float64 `json:"interval"`
		} `json:"meta"`
		Threads   []thread  `json:"threads"`
		Processes []process `json:"processes"`
	}
	var p process
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return nil, 0, fmt.Errorf("%s: %v", path, err)
	}
	out := map[int][]float64{}
	var walk func(q process)
	walk = func(q process) {
		for _, th := range q.Threads {
			tid, err := strconv.Atoi(strings.Trim(string(th.Tid), `"`))
			if err != nil || !busy[tid] {
				continue
			}
			col, ok := th.Samples.Schema["time"]
			if !ok {
				continue
			}
			for _, row := range th.Samples.Data {
				if col < len(row) {
					ms, _ := row[col].Float64()
					out[tid] = append(out[tid], (q.Meta.StartTime+ms)/1e3-offset)
				}
			}
		}
		for _, sub := range q.Processes {
			walk(sub)
		}
	}
	walk(p)
	return out, p.Meta.Interval, nil
}

// switched is one sched_switch.
type switched struct {
	at        float64
	cpu       int
	prev      int
	prevState string
	next      int
	nextComm  string
	nextPrio  int
}

var switchRE = regexp.MustCompile(`\[(\d+)\].*?\s([\d.]+): sched_switch: prev_comm=.*? prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+) next_prio=(\d+)`)

func readSwitches(f *os.File) ([]switched, error) {
	var out []switched
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		m := switchRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var s switched
		s.cpu, _ = strconv.Atoi(m[1])
		s.at, _ = strconv.ParseFloat(m[2], 64)
		s.prev, _ = strconv.Atoi(m[3])
		s.prevState = m[4]
		s.nextComm = m[5]
		s.next, _ = strconv.Atoi(m[6])
		s.nextPrio, _ = strconv.Atoi(m[7])
		out = append(out, s)
	}
	return out, sc.Err()
}

// wait is a stretch of another task running on the CPU a preempted
// thread waits for.
type wait struct {
	from, to float64
	who      string
}

// programComm is the name the kernel gives a program's threads.
func programComm(path string) string {
	name := filepath.Base(path)
	if len(name) > 15 {
		name = name[:15]
	}
	return name
}

// waitsOf returns who ran on tid's CPU while it waited there, runnable
// (preempted, not asleep); the program's threads are named comm.
func waitsOf(tid int, comm string, sw []switched) []wait {
	var out []wait
	type running struct {
		since float64
		who   string
	}
	on := map[int]running{}
	cpu, waiting := -1, false
	for _, s := range sw {
		if r, ok := on[s.cpu]; ok && waiting && s.cpu == cpu {
			out = append(out, wait{r.since, s.at, r.who})
		}
		on[s.cpu] = running{s.at, classify(s.nextComm, s.nextPrio, comm)}
		if s.prev == tid {
			cpu, waiting = s.cpu, strings.HasPrefix(s.prevState, "R")
		}
		if s.next == tid {
			waiting = false
		}
	}
	return out
}

// classify names who ran: prio below 100 is a real-time thread.
func classify(comm string, prio int, program string) string {
	switch {
	case comm == program:
		return "the program"
	case strings.HasPrefix(comm, "gprof") && prio < 100:
		return "gprof real-time"
	case strings.HasPrefix(comm, "gprof"):
		return "gprof"
	}
	if i := strings.IndexAny(comm, "/:"); i > 0 {
		comm = comm[:i]
	}
	return "other " + comm
}
