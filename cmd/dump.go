package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/internal/atomicfile"
	"github.com/gprof-dev/gprof/record"
)

// ExitTimedOut is dump --timeout's exit code when the command ran out of
// time, as timeout(1)'s.
const ExitTimedOut = 124

func dumpCommand() *cli.Command {
	return &cli.Command{
		Name:      "dump",
		Usage:     "print every thread's stack of a process once (native and Python frames), or of a command that runs out of time",
		ArgsUsage: "-p PID | --timeout DURATION -- COMMAND [ARGS...]",
		Description: `Stops every thread of process PID at once, takes each one's registers, a copy
of its stack and, in CPython, its Python frames, lets them all go again,
and prints each thread's stack, innermost frame first, with function
names, files and lines, like gdb's 'thread apply all bt', with the
thread's name and what it was doing (running, sleeping in the kernel
function it waits in, ...). The process is stopped only while the copies
are taken; the output says for how long (usually well under a
millisecond a thread). With -t, only those threads are stopped and shown.

It needs ptrace and nothing else: it works where perf events are denied,
for the user's own processes or as root (kernel.yama.ptrace_scope may
restrict it to root, or to a command gprof runs itself).

--timeout DURATION -- COMMAND runs COMMAND as timeout(1) would: if it
is still running after DURATION, the stacks of the command and of every
process it started are printed first (to stderr, or -o FILE), then it is
sent SIGTERM, and SIGKILL --kill-after later; gprof exits 124. A command
that ends in time gives its own exit status. If gprof itself gets
SIGTERM, SIGINT or SIGHUP meanwhile (a CI job cancelled), it dumps the
stacks the same way before passing the signal on. This is the way for a
CI job to see where a hung test was stuck before it is killed: see
docs/ci.md.

Output: text, or with --json a JSON document (schema in docs/formats.md,
"gprof dump --json").

Exit codes: 0 success; 1 the process could not be dumped (no such
process, not permitted); 2 bad command line; with --timeout, the
command's own status, or 124 when it timed out.

Examples:
   # where is process 1234 stuck?
   ./bin/gprof dump -p 1234

   # one thread of it, as JSON
   ./bin/gprof dump -p 1234 -t 1240 --json

   # CI: run the tests, and if they hang for 20 minutes, show every stack
   # before killing them
   ./bin/gprof dump --timeout 20m -- pytest -x tests/`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "pid", Aliases: []string{"p"}, Usage: "dump process `PID`"},
			&cli.StringSliceFlag{Name: "tid", Aliases: []string{"t"}, Usage: "dump thread `TID` of -p PID alone (repeatable, or comma-separated); without -p, its process is found"},
			&cli.StringFlag{Name: "timeout", Usage: "run the command after '--'; dump its processes and end it if it runs longer than `DURATION` (e.g. 30s, 20m)"},
			&cli.StringFlag{Name: "kill-after", Value: "10s", Usage: "with --timeout, send SIGKILL this `DURATION` after SIGTERM if the command is still there"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the dump to `FILE` (default: standard output, or standard error with --timeout)"},
			jsonFlag,
			&cli.BoolFlag{Name: "no-python", Usage: "leave CPython's eval function frames as they are, rather than show the Python functions (file and line) they ran"},
			&cli.StringFlag{Name: "stack-size", Value: "512K", Usage: "bytes of each thread's stack to copy (`SIZE`, e.g. 1M): deeper stacks need more"},
			symbolDirFlag, debuginfodFlag, symbolServerFlag,
		},
		Action: runDump,
	}
}

func runDump(c *cli.Context) error {
	ss, err := parseSize(c.String("stack-size"))
	if err != nil || ss < 4096 || ss > 64<<20 {
		return usagef("--stack-size %s is out of range: use 4K to 64M", c.String("stack-size"))
	}
	if err := checkSymbolDirs(c); err != nil {
		return err
	}
	rc, err := remoteClient(c)
	if err != nil {
		return err
	}
	tids, err := parseIDs(c.StringSlice("tid"), "TID", "thread", "-t")
	if err != nil {
		return err
	}
	opts := record.DumpOptions{Pid: c.Int("pid"), Tids: tids, StackSize: int(ss), NoPython: c.Bool("no-python"),
		SymbolDirs: c.StringSlice("symbol-dir"), Remote: rc,
		Notice: func(msg string) { fmt.Fprintln(os.Stderr, "gprof: "+msg) }}
	out := c.String("output")
	if out == "-" {
		out = ""
	}
	if out != "" {
		if err := checkWritable(out); err != nil {
			return err
		}
	}
	asJSON := c.Bool("json")
	if c.IsSet("timeout") {
		if opts.Pid != 0 || len(tids) > 0 {
			return usagef("give either -p PID (or -t TID) or --timeout with a command, not both")
		}
		return dumpOnTimeout(c, opts, out, asJSON)
	}
	if c.Args().Len() > 0 {
		return usagef("a command goes with --timeout DURATION; to dump a running process, give -p PID")
	}
	switch {
	case opts.Pid < 0:
		return usagef("invalid -p %d: give a positive process ID", opts.Pid)
	case opts.Pid == 0 && len(tids) == 0:
		return usagef("nothing to dump: give -p PID (or -t TID), or --timeout DURATION -- COMMAND")
	case opts.Pid == os.Getpid():
		return usagef("-p %d is gprof itself, which cannot dump itself", opts.Pid)
	case opts.Pid == 0:
		// Threads alone: their process.
		pid, err := processOfThreads(tids)
		if err != nil {
			return err
		}
		opts.Pid = pid
	}
	d, err := record.TakeDump(opts)
	if err != nil {
		return dumpError(opts.Pid, err)
	}
	return writeDumps(out, []*record.Dump{d}, asJSON, os.Stdout)
}

// processOfThreads is the one process threads tids belong to.
func processOfThreads(tids []int) (int, error) {
	pid := 0
	for _, tid := range tids {
		p, ok := threadGroup(tid)
		if !ok {
			return 0, fmt.Errorf("thread %d: %w", tid, attach.ErrNoSuchProcess)
		}
		if pid != 0 && p != pid {
			return 0, usagef("threads %d and %d are of different processes (%d and %d): dump one process at a time", tids[0], tid, pid, p)
		}
		pid = p
	}
	return pid, nil
}

// threadGroup reads the process a thread belongs to (/proc/TID/status's
// Tgid).
func threadGroup(tid int) (int, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			var pid int
			_, err := fmt.Sscan(strings.TrimSpace(v), &pid)
			return pid, err == nil
		}
	}
	return 0, false
}

// dumpError words a dump's failure with what to do.
func dumpError(pid int, err error) error {
	switch {
	case errors.Is(err, attach.ErrNoSuchProcess):
		return fmt.Errorf("cannot dump pid %d: %v", pid, err)
	case errors.Is(err, attach.ErrUnsupported):
		return err
	}
	return fmt.Errorf("cannot dump pid %d: %v", pid, err)
}

// writeDumps writes dumps, as text or JSON, to out ("" for w).
func writeDumps(out string, dumps []*record.Dump, asJSON bool, w io.Writer) error {
	write := func(w io.Writer) error {
		if asJSON {
			return encodeJSON(dumpJSONOf(dumps))(w)
		}
		for i, d := range dumps {
			if i > 0 {
				fmt.Fprintln(w)
			}
			writeDumpText(w, d)
		}
		return nil
	}
	if out == "" {
		var b bytes.Buffer
		write(&b)
		_, err := w.Write(b.Bytes())
		return err
	}
	if err := atomicfile.Write(out, write); err != nil {
		return fmt.Errorf("cannot write %v", err)
	}
	return nil
}

// writeDumpText lays a dump out as gdb does a backtrace, thread by thread.
func writeDumpText(w io.Writer, d *record.Dump) {
	name := d.Name
	if len(d.Argv) > 0 {
		name = strings.Join(d.Argv, " ")
		if len(name) > 120 {
			name = name[:117] + "..."
		}
	}
	fmt.Fprintf(w, "Process %d (%s): %s, stopped for %s (%s)\n", d.Pid, name, plural(len(d.Threads), "thread"), fmtStopped(d.Stopped), d.Backend)
	for _, th := range d.Threads {
		state := record.StateName(th.State)
		if th.Wchan != "" && th.State != 'R' {
			state += " in " + th.Wchan
		}
		fmt.Fprintf(w, "\nThread %d %q (%s):\n", th.Tid, th.Name, state)
		if th.Error != "" {
			fmt.Fprintf(w, "  (no stack: %s)\n", th.Error)
			continue
		}
		for i, f := range th.Frames {
			fmt.Fprintf(w, "  #%-2d %s\n", i, frameText(f))
		}
	}
}

// frameText is one frame's line: address, function, file and line, and
// the binary (or [python], [inlined]).
func frameText(f record.DumpFrame) string {
	var b strings.Builder
	if f.Address != 0 && !f.Inlined {
		fmt.Fprintf(&b, "0x%016x in ", f.Address)
	} else {
		b.WriteString("                   ")
	}
	if f.Function != "" {
		b.WriteString(f.Function)
	} else {
		b.WriteString("??")
	}
	if f.File != "" {
		fmt.Fprintf(&b, " at %s", f.File)
		if f.Line > 0 {
			fmt.Fprintf(&b, ":%d", f.Line)
		}
	}
	switch {
	case f.Python:
		b.WriteString(" [python]")
	case f.Inlined:
		b.WriteString(" [inlined]")
	}
	if f.Lib != "" && !f.Python {
		fmt.Fprintf(&b, " (%s)", f.Lib)
	}
	return b.String()
}

func fmtStopped(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
	return fmt.Sprintf("%.2f ms", float64(d)/1e6)
}

// dumpJSON is gprof dump --json; the schema is in docs/formats.md ("gprof
// dump --json") and is a stable interface.
type dumpJSON struct {
	Version   int           `json:"version"`
	Processes []dumpProcess `json:"processes"`
}

// dumpJSONVersion is the version of the dump JSON schema.
const dumpJSONVersion = 1

type dumpProcess struct {
	Pid       int          `json:"pid"`
	Name      string       `json:"name"`
	Argv      []string     `json:"argv"`
	Backend   string       `json:"backend"`
	StoppedMs float64      `json:"stopped_ms"`
	Threads   []dumpThread `json:"threads"`
}

type dumpThread struct {
	Tid       int         `json:"tid"`
	Name      string      `json:"name"`
	State     string      `json:"state"`
	StateName string      `json:"state_name"`
	Wchan     string      `json:"wchan,omitempty"`
	Error     string      `json:"error,omitempty"`
	Frames    []dumpFrame `json:"frames"`
}

type dumpFrame struct {
	Address  string `json:"address,omitempty"`
	Function string `json:"function"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Lib      string `json:"lib,omitempty"`
	Python   bool   `json:"python,omitempty"`
	Inlined  bool   `json:"inlined,omitempty"`
}

func dumpJSONOf(dumps []*record.Dump) dumpJSON {
	out := dumpJSON{Version: dumpJSONVersion, Processes: []dumpProcess{}}
	for _, d := range dumps {
		p := dumpProcess{Pid: d.Pid, Name: d.Name, Argv: d.Argv, Backend: d.Backend,
			StoppedMs: float64(d.Stopped.Microseconds()) / 1000, Threads: []dumpThread{}}
		if p.Argv == nil {
			p.Argv = []string{}
		}
		for _, th := range d.Threads {
			t := dumpThread{Tid: th.Tid, Name: th.Name, State: string(rune(th.State)), StateName: record.StateName(th.State),
				Wchan: th.Wchan, Error: th.Error, Frames: []dumpFrame{}}
			if th.State == 0 {
				t.State = ""
			}
			for _, f := range th.Frames {
				df := dumpFrame{Function: f.Function, File: f.File, Line: f.Line, Lib: f.Lib, Python: f.Python, Inlined: f.Inlined}
				if f.Address != 0 {
					df.Address = fmt.Sprintf("0x%x", f.Address)
				}
				t.Frames = append(t.Frames, df)
			}
			p.Threads = append(p.Threads, t)
		}
		out.Processes = append(out.Processes, p)
	}
	return out
}

// dumpOnTimeout runs the command after '--' as timeout(1) does, dumping
// its processes before it is ended for running out of time, or before a
// signal that ends gprof is passed on to it.
func dumpOnTimeout(c *cli.Context, opts record.DumpOptions, out string, asJSON bool) error {
	limit, err := parseSecondsFlag("--timeout", c.String("timeout"))
	if err != nil {
		return err
	}
	killAfter, err := parseSecondsFlag("--kill-after", c.String("kill-after"))
	if err != nil {
		return err
	}
	argv := c.Args().Slice()
	if len(argv) == 0 {
		return usagef("--timeout runs a command: give it after '--', e.g. 'gprof dump --timeout 20m -- make test'")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// A group of its own, which the signals go to, as timeout(1)'s.
	cmd.SysProcAttr = newProcessGroup()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			return fmt.Errorf("cannot run %s: %v", argv[0], ee.Err)
		}
		return fmt.Errorf("cannot run %s: %v", argv[0], err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var sig os.Signal
	timedOut := false
	select {
	case <-done:
		return commandStatus(cmd)
	case <-timer.C:
		timedOut = true
		fmt.Fprintf(os.Stderr, "gprof: %s timed out after %v: the stacks of its processes, then SIGTERM\n", filepath.Base(argv[0]), limit)
	case sig = <-sigs:
		fmt.Fprintf(os.Stderr, "gprof: got %s: the stacks of %s's processes, then %s for them\n", signalName(sig), filepath.Base(argv[0]), signalName(sig))
	}
	var dumps []*record.Dump
	for _, pid := range attach.Descendants(cmd.Process.Pid) {
		o := opts
		o.Pid = pid
		d, err := record.TakeDump(o)
		if err != nil {
			fmt.Fprintf(os.Stderr, "gprof: cannot dump pid %d: %v\n", pid, err)
			continue
		}
		dumps = append(dumps, d)
	}
	if err := writeDumps(out, dumps, asJSON, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "%s %v\n", errorPrefix(os.Stderr), err)
	}
	if sig == nil {
		sig = syscall.SIGTERM
	}
	signalGroup(cmd.Process.Pid, sig)
	select {
	case <-done:
	case <-time.After(killAfter):
		fmt.Fprintf(os.Stderr, "gprof: %s is still there %v after %s: SIGKILL\n", filepath.Base(argv[0]), killAfter, signalName(sig))
		signalGroup(cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	if timedOut {
		return exitCodeError{ExitTimedOut}
	}
	// As if the signal had ended gprof, which it would have without
	// the dump.
	code := ExitSignal + 1
	if s, ok := sig.(syscall.Signal); ok {
		code = ExitSignal + int(s)
	}
	return exitCodeError{code}
}

// commandStatus is the exit status of a command that ended on its own.
func commandStatus(cmd *exec.Cmd) error {
	ps := cmd.ProcessState
	if ps == nil {
		return exitCodeError{ExitError}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitCodeError{ExitSignal + int(ws.Signal())}
	}
	if code := ps.ExitCode(); code != 0 {
		return exitCodeError{code}
	}
	return nil
}
