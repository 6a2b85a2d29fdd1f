package cmd

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/format"
	"github.com/gprof-dev/gprof/record"

	// Linked in to record: this platform's backends (attach.Register).
	_ "github.com/gprof-dev/gprof/attach/backends"
)

func recordCommand() *cli.Command {
	return &cli.Command{
		Name:      "record",
		Usage:     "sample a command or running processes and write a profile",
		ArgsUsage: "[-- COMMAND [ARGS...]]",
		Description: `Samples the stack and CPU time of every thread of the targets, until Ctrl-C
(SIGINT) or SIGTERM, until --duration has passed, or until every target has
exited, then writes a Firefox Profiler (Gecko format) profile. On a
terminal it shows a live status line (for a launched command, on the
bottom row, below the command's own output). Open it at
https://profiler.firefox.com ("Load a profile from file"), or with names
from a local server with 'gprof view' (or --view here).

A launched command is followed through fork, clone and exec; sampling is
armed before its first instruction. If the command fails on its own (a
non-zero status, or killed by a signal), the profile is still written and
gprof exits 4; the command's status is in the summary (--json: exit_code).
A command that cannot be run (not found, not executable, a missing #!
interpreter) is an error: exit 1, nothing written. If recording stops
before the command ends (Ctrl-C, SIGTERM or --duration), the command is sent
SIGTERM (SIGKILL if it is still there 3 s later) and gprof exits 0 once the
profile is written; if gprof itself is killed, the kernel kills the command
(SIGKILL). Processes attached with -p keep running, untouched, when gprof
exits. Kernel threads (no user space to sample) and gprof itself cannot be
attached.
A second Ctrl-C (or SIGTERM, SIGHUP) while the profile is being finished
aborts at once, writing nothing (exit 130 for SIGINT: 128 + the signal's
number); SIGQUIT (Ctrl-\) ends the recording and aborts the same way.

With --push URL, the profile is then sent to an OpenTelemetry Collector as
'gprof push' sends it (see 'gprof push --help'; --service-name, --label,
--header, --ca-file, --no-gzip, --push-timeout and --max-request-size go
with it). The file is
written whether or not the push works; one that fails for good exits 5.

Exit codes: 0 success; 1 gprof failed, nothing written; 2 bad command line;
4 the profile was written but the launched command failed; 5 the profile
was written but --push could not deliver it; 128+N aborted by signal N.

Function names are resolved when recording ends and stored inside the
profile, so it stays readable after the binaries change or the file moves
to another machine (--no-symbols skips this). gprof's own commands use
them; the Firefox Profiler shows them when the profile is in the processed
format: record with --format processed, or run 'gprof convert'.

Examples:
   # profile a command until it exits
   ./bin/gprof record -- ./myprogram --its-args

   # attach to two running processes for 10 seconds at 4 kHz
   ./bin/gprof record -p 1234 -p 5678 -d 10 -r 4000 -o server.json.gz

   # every process on the machine while a build runs
   ./bin/gprof record -a -o build.json.gz -- make -j8

   # one thread (TID 1240) of a process, alone, for 10 seconds
   ./bin/gprof record -t 1240 -d 10

   # CI: no terminal output, a JSON summary in summary.json
   ./bin/gprof record -q --json-output summary.json -o perf.json.gz -- make test
   jq '.samples' summary.json

   # CI: send the run to the team's OpenTelemetry Collector, labelled
   ./bin/gprof record -q -o run.json.gz --push http://localhost:4318 \
       --label vcs.ref.head.revision=$(git rev-parse HEAD) -- ./bench`,

		Flags: recordFlags(append([]cli.Flag{
			&cli.StringSliceFlag{Name: "pid", Aliases: []string{"p"}, Usage: "attach to process `PID` (repeatable, or comma-separated)"},
			&cli.BoolFlag{Name: "system-wide", Aliases: []string{"a"}, Usage: "record every process on the machine, and those that start, each with its threads (kernel threads too with -k), until Ctrl-C, -d, or the command given after '--' exits (perf backend; needs root, CAP_PERFMON or kernel.perf_event_paranoid <= 0)"},
			&cli.StringSliceFlag{Name: "tid", Aliases: []string{"t"}, Usage: "attach to thread `TID` alone: not its process's other threads, nor threads it creates (repeatable, or comma-separated)"},
			&cli.Float64Flag{Name: "rate", Aliases: []string{"r", "F"}, Value: 1000, Usage: "sample each running thread `HZ` times per second of CPU time"},
			&cli.StringFlag{Name: "interval", Aliases: []string{"i"}, Usage: "sample every `DURATION` of CPU time (e.g. 250us), instead of --rate"},
			&cli.StringFlag{Name: "duration", Aliases: []string{"d"}, Usage: "stop after `SECONDS` (a number, or a duration like 1m30s)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "profile.json.gz", Usage: "write the profile to `FILE` (gzip when it ends in .gz; - for standard output, uncompressed)"},
			&cli.StringFlag{Name: "format", Value: "gecko", Usage: "profile `FORMAT`: gecko (raw addresses, names stored alongside; what the Firefox Profiler records) or processed (names applied, opens with names on profiler.firefox.com as is)"},
			&cli.BoolFlag{Name: "kernel", Aliases: []string{"k"}, Usage: "include kernel frames when the kernel permits (named from /proc/kallsyms); without it, time in the kernel is one [kernel] frame"},
			&cli.BoolFlag{Name: "off-cpu", Usage: "also sample threads while they are off the CPU (blocked or preempted), at the same interval of wall-clock time, with the stack they blocked in: every thread gets a sample per interval of its life"},
			&cli.IntFlag{Name: "off-cpu-cap", Usage: "with --off-cpu, take at most about `N` wait stacks a second per thread (counted per second of the thread's CPU time, as perf's frequency mode does), showing the other waits at the thread's previous stack: bounds the cost for threads that switch tens of thousands of times a second (default: a stack at every switch)"},
			&cli.BoolFlag{Name: "no-python", Usage: "leave CPython's eval function frames as they are, rather than show the Python functions (file and line) they ran in their place"},
			&cli.BoolFlag{Name: "no-counters", Usage: "do not sample each process's memory and CPU use, nor gprof's own overhead, at the interval"},
			&cli.StringFlag{Name: "call-graph", Value: "", Usage: "user stacks: `MODE` fp (frame pointers, cheapest) or dwarf (CFI unwinding of a stack copy; complete stacks without frame pointers); default dwarf"},
			&cli.StringFlag{Name: "stack-size", Value: "16K", Usage: "bytes of user stack copied per sample in dwarf mode (`SIZE`, e.g. 8K; max 65528, which 64K stands for)"},
			&cli.StringFlag{Name: "backend", Value: "", Usage: "sampling `BACKEND`: perf or ptrace on Linux (default perf, falling back to ptrace when perf_event_open is denied), mach on macOS, etw or suspend on Windows (default etw, falling back to suspend when ETW is denied or delivers no events)"},
			&cli.BoolFlag{Name: "no-symbols", Usage: "do not resolve and store function names at the end (faster; names are then resolved by 'gprof convert' or 'gprof symbolicate' from the binaries on disk)"},
			&cli.StringSliceFlag{Name: "symbol-dir", Usage: "also look for debug files in `DIR` (repeatable)"},
			debuginfodFlag, symbolServerFlag,
			&cli.StringFlag{Name: "max-memory", Usage: "keep at most `SIZE` of profile data in memory (e.g. 256M, 1G), discarding the oldest samples past it: for long or open-ended recordings"},
			&cli.StringFlag{Name: "keep", Usage: "keep only the last `SECONDS` of samples (a number, or a duration like 5m), discarding older ones"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors on stderr"},
			jsonOutputFlag("a summary of the recording", ", apart from the command's output"),
			jsonFlag,
			&cli.BoolFlag{Name: "view", Usage: "then open the profile in the Firefox Profiler with names, as 'gprof view' does, until Ctrl-C"},
			&cli.StringFlag{Name: "push", Usage: "then send the profile to the OpenTelemetry Collector at `URL` (OTLP/HTTP, as 'gprof push' does); the file is written all the same, and a push that fails exits 5"},
		}, eventFlags()...)),
		Action: recordAndView,
	}
}

// recordFlags are record's flags: its own, those of its control in time,
// then those of --push.
func recordFlags(own []cli.Flag) []cli.Flag {
	return append(append(append(own, recordTimeFlags()...), otlpFlags()...), sendFlags("push-timeout")...)
}

// recordSummary is what --json-output writes; field names are a stable
// interface, documented in docs/formats.md ("JSON output").
type recordSummary struct {
	Version     int     `json:"version"`
	Output      string  `json:"output"`
	DurationSec float64 `json:"duration_s"`
	Samples     uint64  `json:"samples"` // in the file; discarded ones apart
	Processes   int     `json:"processes"`
	Threads     int     `json:"threads"`
	Lost        uint64  `json:"lost"`
	ExitCode    *int    `json:"exit_code"`
	Backend     string  `json:"backend"`
	Event       string  `json:"event"`
	// Events lists every event sampled, when there are several.
	Events    []string `json:"events,omitempty"`
	Symbols   int      `json:"symbolicated_addresses"`
	Discarded uint64   `json:"discarded_samples"`
	// NoStackSec is CPU time counted in the profile that no stack shows
	// (kernel mode the kernel would not sample); NoStackWhy says why.
	NoStackSec float64 `json:"no_stack_cpu_s,omitempty"`
	NoStackWhy string  `json:"no_stack_reason,omitempty"`
	// OffCPUWaits counts the times threads went off the CPU (--off-cpu);
	// OffCPUUnstacked those beyond the stack cap, shown at the thread's
	// previous stack.
	OffCPUWaits     uint64 `json:"off_cpu_waits,omitempty"`
	OffCPUUnstacked uint64 `json:"off_cpu_unstacked,omitempty"`
	// SampleRatio is the samples busy threads got over what the rate
	// asks for their CPU time (1 is all of them), SampleRatioMin the
	// lowest of one busy thread; absent when no thread used 50 intervals
	// of CPU.
	SampleRatio    *float64 `json:"sample_ratio,omitempty"`
	SampleRatioMin *float64 `json:"sample_ratio_min,omitempty"`
	// EventLayout is how the perf backend opened its events: per-thread
	// (one per target thread and CPU, as perf record -p) or per-cpu (one
	// per CPU, filtered to the targets: when the former would not fit the
	// file limit, and always with -a); EventFiles how many files they
	// took. Absent for the other backends.
	EventLayout string `json:"event_layout,omitempty"`
	EventFiles  int    `json:"event_files,omitempty"`
	// Pushed says whether --push delivered the profile; absent without
	// --push.
	Pushed *bool `json:"pushed,omitempty"`
	// Fetched are the debug files fetched from debuginfod servers.
	Fetched []fetchedFile `json:"fetched,omitempty"`
	// PythonSamples counts the samples whose CPython eval frames were
	// replaced by Python frames; PythonUnread the samples in the eval
	// function left with native frames only (their Python stack could
	// not be read, or was not the sample's). Absent without Python.
	PythonSamples *uint64 `json:"python_samples,omitempty"`
	PythonUnread  *uint64 `json:"python_unread,omitempty"`
	// PausedRanges are the stretches with sampling off (-D, --control),
	// in seconds from the start of the (last window's) profile; EndSec
	// is null while sampling was still off at the end.
	PausedRanges []pausedSummary `json:"paused_ranges,omitempty"`
	// Windows are the files of --switch-output, oldest first; Output is
	// then the last one and Samples counts those of every window.
	Windows []*windowSummary `json:"windows,omitempty"`
}

// pausedSummary is a stretch with sampling off, in the summary.
type pausedSummary struct {
	StartSec float64  `json:"start_s"`
	EndSec   *float64 `json:"end_s"`
}

// fetchedFile is a debug file a server sent: where from, where it is
// cached, its size.
type fetchedFile struct {
	URL   string `json:"url"`
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// ratio rounds a sample ratio for the summary; 0 (no figure) is nil.
func ratio(r float64) *float64 {
	if r == 0 {
		return nil
	}
	r = math.Round(r*1000) / 1000
	return &r
}

func runRecord(c *cli.Context) error {
	opts, err := recordOptions(c)
	if err != nil {
		return err
	}
	kind := format.Kind(c.String("format"))
	if kind != format.Gecko && kind != format.Processed {
		return usagef("unknown --format %q: use gecko or processed", kind)
	}
	if kind == format.Processed && c.Bool("no-symbols") {
		return usagef("--format processed stores names, so it cannot be combined with --no-symbols")
	}
	target, err := recordPushTarget(c)
	if err != nil {
		return err
	}
	out := c.String("output")
	if out == "-" && c.Bool("json") {
		return usagef("-o - and --json both write to standard output: choose one")
	}
	// The first SIGINT, SIGTERM or SIGHUP ends the recording; another, or
	// SIGQUIT, aborts (see signals).
	ctx, sigs := catchSignals(c.Context, true)
	defer sigs.release()
	sigs.writing(out)
	if err := checkWritable(out); err != nil {
		return err
	}
	jsonOut, err := jsonTarget(c)
	if err != nil {
		return err
	}
	quiet := c.Bool("quiet")
	if d, _ := parseSeconds(c.String("duration")); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	// A --control "stop" ends the recording as Ctrl-C does.
	ctx, stopRecording := context.WithCancel(ctx)
	defer stopRecording()

	// A launched command inherits gprof's terminal, so its status line is
	// pinned to the bottom row, out of the way of the command's output.
	var status *statusLine
	if !quiet && isTerminal(os.Stderr) {
		if len(opts.Attach.Command) > 0 {
			status = newPinnedStatusLine(os.Stderr)
		} else {
			status = newStatusLine(os.Stderr)
		}
	}
	opts.Attach.Notice = func(msg string) {
		if !quiet {
			status.println("gprof: " + msg)
		}
	}
	if status != nil {
		opts.Progress = status.update
		// Whatever happens, give the terminal its scroll region back.
		defer status.close()
		sigs.onAbort(status.close)
	}
	ph := newPhases(os.Stderr, quiet)
	sigs.onAbort(ph.done)
	if !quiet {
		sigs.onNotice(func(msg string) { ph.println("gprof: " + msg) })
	}
	opts.Phase = func(msg string) { sigs.finished(); status.close(); ph.set(msg) }
	rt, err := setupRecordTime(c, &opts, out, kind, target, quiet, status.println)
	if err != nil {
		status.close()
		return err
	}
	rt.start(stopRecording)
	res, err := record.Run(ctx, opts)
	rt.end()
	sigs.finished()
	status.close()
	if err != nil {
		ph.done()
		return err
	}
	if msg := rt.neverEnabled(); msg != "" {
		opts.Attach.Notice(msg)
	}
	if rt != nil && rt.win != nil {
		return finishWindows(c, rt, res, ctx.Err() != nil, jsonOut, quiet, ph, opts)
	}
	if res.Samples == 0 && len(opts.Attach.Command) == 0 && len(opts.Attach.Pids)+len(opts.Attach.Tids) > 0 {
		// An attached target that never ran leaves a profile with nothing
		// in it: say so, as for a kernel thread, instead of writing it.
		ph.done()
		for _, pr := range res.Profile.Processes {
			if pr != nil && pr.End >= 0 && slices.Contains(opts.Attach.Pids, pr.Pid) {
				// A zombie, or a process that ended at once: say what
				// a target that is gone is.
				return fmt.Errorf("nothing was sampled: pid %d exited before it could be (no such process), so no profile was written", pr.Pid)
			}
		}
		return fmt.Errorf("nothing was sampled: %s did not run in user space while recording, so no profile was written (--off-cpu samples a process while it waits)", targetsText(opts.Attach.Pids, opts.Attach.Tids))
	}
	ph.set("writing " + outName(out))
	err = writeProfile(out, res.Profile, kind)
	ph.done()
	if err != nil {
		return err
	}
	for _, n := range append(res.RejectedDebugFiles, remoteNotes(opts.Remote)...) {
		opts.Attach.Notice(n)
	}

	sum := summaryOf(res, out, opts)
	if !quiet {
		printRecordSummary(os.Stderr, sum)
	}
	var pushErr error
	if target != nil {
		// Not ctx: it has ended with the recording (--duration, Ctrl-C).
		pph := newPhases(os.Stderr, quiet)
		sigs.onAbort(pph.done)
		pph.set("pushing to " + target.send.URL)
		_, pushErr = target.sendProfile(c.Context, res.Profile, sayUnlessQuiet(pph, quiet))
		pph.done()
		ok := pushErr == nil
		sum.Pushed = &ok
		if pushErr != nil {
			kept := "it is in " + outName(out)
			if out != "-" {
				kept += fmt.Sprintf("; push it later with 'gprof push --endpoint %s %s'", c.String("push"), out)
			}
			fmt.Fprintf(os.Stderr, "%s the profile was not pushed: %v; %s\n", errorPrefix(os.Stderr), pushErr, kept)
		} else if !quiet {
			fmt.Fprintf(os.Stderr, "gprof: pushed the profile to %s\n", target.send.URL)
		}
	}
	if jsonOut != "" {
		if err := writeJSONOutput(jsonOut, encodeJSON(sum)); err != nil {
			return fmt.Errorf("write %s: %v", jsonOut, err)
		}
	}
	// A command that failed on its own gets a code of its own, so that a
	// script can tell it from gprof's failure (the command's status could
	// be any number, 1 and 2 included); one that gprof stopped (duration,
	// Ctrl-C, SIGTERM) did not fail.
	if pushErr != nil {
		// Before the command's failure: the command's status is in the
		// summary, and a script that sees 5 knows to push the file again.
		return exitCodeError{ExitPushFailed}
	}
	if res.ExitCode > 0 && ctx.Err() == nil {
		return exitCodeError{ExitCommandFailed}
	}
	return nil
}

// summaryOf is the summary of a recording whose profile went to out.
func summaryOf(res *record.Result, out string, opts record.Options) recordSummary {
	sum := recordSummary{
		Version: recordSummaryVersion, Output: out, DurationSec: res.Duration.Seconds(), Samples: res.Samples,
		Processes: res.Processes, Threads: res.Threads, Lost: res.Lost,
		Backend: res.Backend, Event: res.Event, Symbols: res.SymbolicatedAddresses,
		Discarded: res.Discarded, NoStackSec: res.NoStackCPU.Seconds(), NoStackWhy: res.NoStackReason,
		OffCPUWaits: res.OffCPUSwitches, OffCPUUnstacked: res.OffCPUUnstacked,
		SampleRatio: ratio(res.SampleRatio), SampleRatioMin: ratio(res.SampleRatioMin),
		EventLayout: res.Layout, EventFiles: res.Files,
	}
	if evs := res.Profile.Meta.Extra["events"]; evs != "" {
		sum.Events = strings.Split(evs, ",")
	}
	for _, f := range opts.Remote.Fetched() {
		sum.Fetched = append(sum.Fetched, fetchedFile{URL: f.URL, Path: f.Path, Bytes: f.Bytes})
	}
	if res.PythonSamples+res.PythonUnread > 0 {
		sum.PythonSamples, sum.PythonUnread = &res.PythonSamples, &res.PythonUnread
	}
	if res.ExitCode >= 0 {
		sum.ExitCode = &res.ExitCode
	}
	for _, r := range res.Profile.Meta.PausedRanges {
		ps := pausedSummary{StartSec: float64(r.Start) / 1e9}
		if r.End >= 0 {
			end := float64(r.End) / 1e9
			ps.EndSec = &end
		}
		sum.PausedRanges = append(sum.PausedRanges, ps)
	}
	return sum
}

// recordPushTarget checks --push and the flags that go with it.
func recordPushTarget(c *cli.Context) (*pushTarget, error) {
	if u := c.String("push"); u != "" {
		return pushTargetFrom(c, u, "--push", "push-timeout")
	}
	for _, f := range append(otlpFlags(), sendFlags("push-timeout")...) {
		if c.IsSet(f.Names()[0]) {
			return nil, usagef("--%s goes with --push URL", f.Names()[0])
		}
	}
	return nil, nil
}

// targetsText names the attached processes and threads: "pid 1", "pids
// 4 and 5, thread 9".
func targetsText(pids, tids []int) string {
	list := func(what string, ids []int) string {
		if len(ids) == 0 {
			return ""
		}
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = strconv.Itoa(id)
		}
		if len(ids) > 1 {
			what += "s"
		}
		return what + " " + strings.Join(s, ", ")
	}
	var parts []string
	for _, p := range []string{list("pid", pids), list("thread", tids)} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", ")
}

func printRecordSummary(w io.Writer, s recordSummary) {
	fmt.Fprintf(w, "gprof: wrote %s: %s", outName(s.Output), plural(int(s.Samples), "sample"))
	if s.Discarded > 0 {
		fmt.Fprintf(w, " (%d older ones discarded to stay within --max-memory/--keep)", s.Discarded)
	}
	fmt.Fprintf(w, " from %s in %s over %.2fs", plural(s.Threads, "thread"), plural(s.Processes, "process"), s.DurationSec)
	if s.Lost > 0 {
		fmt.Fprintf(w, ", %d events LOST", s.Lost)
	}
	fmt.Fprintln(w)
	if s.NoStackSec > 0 {
		fmt.Fprintf(w, "gprof: %.2f s of CPU time had no stack (%s); it is counted in the CPU time of the samples that follow it\n", s.NoStackSec, s.NoStackWhy)
	}
	if s.PythonSamples != nil {
		fmt.Fprintf(w, "gprof: %d of %d samples in CPython show Python frames; %d kept native frames only (Python stack not read, or not the sample's)\n",
			*s.PythonSamples, *s.PythonSamples+*s.PythonUnread, *s.PythonUnread)
	}
	if s.ExitCode != nil && *s.ExitCode != 0 {
		if sig := exitSignalName(*s.ExitCode); sig != "" {
			fmt.Fprintf(w, "gprof: the command was killed by %s (status %d)\n", sig, *s.ExitCode)
		} else {
			fmt.Fprintf(w, "gprof: the command exited with status %d\n", *s.ExitCode)
		}
	}
}

// plural says "1 thread", "2 threads", "3 processes".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// recordOptions validates the command line into pipeline options.
func recordOptions(c *cli.Context) (record.Options, error) {
	var o record.Options
	var err error
	if o.Attach.Pids, err = parseIDs(c.StringSlice("pid"), "PID", "process", "-p"); err != nil {
		return o, err
	}
	if o.Attach.Tids, err = parseIDs(c.StringSlice("tid"), "TID", "thread", "-t"); err != nil {
		return o, err
	}
	o.Attach.Command = c.Args().Slice()
	o.Attach.SystemWide = c.Bool("system-wide")
	attaching := len(o.Attach.Pids)+len(o.Attach.Tids) > 0
	switch {
	case o.Attach.SystemWide && attaching:
		return o, usagef("-a records every process already: give it without -p / -t")
	case o.Attach.SystemWide:
	case !attaching && len(o.Attach.Command) == 0:
		return o, usagef("nothing to profile: give a command after '--', a process with -p PID, or -a for every process")
	case attaching && len(o.Attach.Command) > 0:
		return o, usagef("give either a command or -p PID / -t TID, not both")
	}

	interval, err := samplingInterval(c)
	if err != nil {
		return o, err
	}
	o.Attach.Interval = interval

	if s := c.String("duration"); s != "" {
		if _, err := parseSeconds(s); err != nil {
			return o, err
		}
	}
	if err := recordEvents(c, &o); err != nil {
		return o, err
	}
	switch cg := c.String("call-graph"); cg {
	case "", "fp", "dwarf":
		o.Attach.CallGraph = cg
	default:
		return o, usagef("unknown --call-graph %q: use fp or dwarf", cg)
	}
	if o.Attach.CallGraph == "" {
		o.Attach.CallGraph = "dwarf"
	}
	ss, err := parseSize(c.String("stack-size"))
	if ss == 64<<10 {
		ss = 65528 // "64K" means as much as the kernel copies
	}
	if err != nil || ss < 512 || ss > 65528 {
		return o, usagef("--stack-size %s is out of range: use 512 to 65528 bytes (e.g. 8K; 64K stands for 65528, the kernel's limit)", c.String("stack-size"))
	}
	o.Attach.StackSize = int(ss) &^ 7
	be, err := attach.ParseBackend(c.String("backend"))
	if err != nil {
		var names []string
		for _, b := range attach.Backends() {
			names = append(names, string(b))
		}
		return o, usagef("unknown --backend %q: use %s", c.String("backend"), cmp.Or(strings.Join(names, " or "), "none: this platform has no backend yet"))
	}
	o.Attach.Backend = be
	if s := c.String("max-memory"); s != "" {
		n, err := parseSize(s)
		if err != nil {
			return o, usagef("invalid --max-memory %q: use a number of bytes with K, M or G, e.g. 256M", s)
		}
		if n < 1<<20 {
			return o, usagef("--max-memory %s is too small: give at least 1M", s)
		}
		o.MaxBytes = n
	}
	if s := c.String("keep"); s != "" {
		d, err := parseSecondsFlag("--keep", s)
		if err != nil {
			return o, err
		}
		o.Keep = d
	}
	o.Attach.Kernel = c.Bool("kernel")
	o.Attach.OffCPU = c.Bool("off-cpu")
	o.Attach.OffCPUCap = c.Int("off-cpu-cap")
	if o.Attach.OffCPUCap < 0 {
		return o, usagef("--off-cpu-cap must be 0 (no cap) or a positive number of stacks a second")
	}
	o.NoCounters = c.Bool("no-counters")
	o.NoPython = c.Bool("no-python")
	o.Symbolize = !c.Bool("no-symbols")
	if err := checkSymbolDirs(c); err != nil {
		return o, err
	}
	o.SymbolDirs = c.StringSlice("symbol-dir")
	if o.Remote, err = remoteClient(c); err != nil {
		return o, err
	}
	if s := c.String("output"); s == "" {
		return o, usagef("--output needs a file name")
	}
	return o, nil
}

// parseIDs reads repeated, comma-separated process or thread ids. gprof's
// own is refused here, as a mistake on the command line: a profiler cannot
// usefully sample itself (ptrace cannot trace itself at all).
func parseIDs(vals []string, what, noun, flag string) ([]int, error) {
	var ids []int
	for _, s := range vals {
		for _, f := range strings.Split(s, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			id, err := strconv.Atoi(f)
			if err != nil || id <= 0 {
				return nil, usagef("invalid %s %q: give a positive %s ID, e.g. %s 1234", what, f, noun, flag)
			}
			if id == os.Getpid() {
				return nil, usagef("%s %d is gprof itself, which cannot profile itself", flag, id)
			}
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// samplingInterval reconciles --rate (and its perf-style alias -F) with
// --interval.
func samplingInterval(c *cli.Context) (time.Duration, error) {
	if s := c.String("interval"); s != "" {
		if c.IsSet("rate") {
			return 0, usagef("give --rate or --interval, not both")
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, usagef("invalid --interval %q: use a duration like 1ms or 250us", s)
		}
		if d < 10*time.Microsecond || d > 10*time.Second {
			return 0, usagef("--interval %s is out of range: use 10us to 10s", d)
		}
		return d, nil
	}
	hz := c.Float64("rate")
	if !(hz >= 0.1 && hz <= 100000) { // also refuses NaN
		return 0, usagef("--rate %s is out of range: use 0.1 to 100000 Hz", strconv.FormatFloat(hz, 'f', -1, 64))
	}
	return time.Duration(float64(time.Second) / hz), nil
}

// parseSeconds accepts "10", "2.5" (seconds) or a Go duration ("1m30s")
// for --duration.
func parseSeconds(s string) (time.Duration, error) { return parseSecondsFlag("--duration", s) }

// Bounds of a time span on the command line: shorter is not measurable at
// sampling rates, longer is a typo (and past 292 years a Duration overflows).
const (
	minSeconds = time.Millisecond
	maxSeconds = 366 * 24 * time.Hour
)

// parseSecondsFlag is parseSeconds for the flag named flag. NaN, infinities
// and spans outside [minSeconds, maxSeconds] are refused.
func parseSecondsFlag(flag, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if f, ferr := strconv.ParseFloat(s, 64); ferr == nil {
		// Compare as floats: converting a huge or NaN value to a Duration
		// would wrap around.
		if !(f*float64(time.Second) >= float64(minSeconds) && f*float64(time.Second) <= float64(maxSeconds)) {
			return 0, usagef("%s %s is out of range: use 1ms to 366 days (e.g. 10, 2.5, 1m30s)", flag, s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	if err != nil {
		return 0, usagef("invalid %s %q: use seconds (10, 2.5) or a duration (1m30s)", flag, s)
	}
	if d < minSeconds || d > maxSeconds {
		return 0, usagef("%s %s is out of range: use 1ms to 366 days (e.g. 10, 2.5, 1m30s)", flag, s)
	}
	return d, nil
}

// parseSize reads a byte count with an optional K, M or G suffix (powers
// of 1024, as memory is counted), also written KB, KiB and so on; the
// result is between 1 byte and 1 TiB.
func parseSize(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := int64(1)
	switch {
	case strings.HasSuffix(t, "K"):
		mult, t = 1<<10, strings.TrimSuffix(t, "K")
	case strings.HasSuffix(t, "M"):
		mult, t = 1<<20, strings.TrimSuffix(t, "M")
	case strings.HasSuffix(t, "G"):
		mult, t = 1<<30, strings.TrimSuffix(t, "G")
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || !(f*float64(mult) >= 1 && f*float64(mult) <= 1<<40) { // !(...) also catches NaN
		return 0, usagef("invalid size %q: use a number of bytes with K, M or G, e.g. 256M", s)
	}
	return int64(f * float64(mult)), nil
}
