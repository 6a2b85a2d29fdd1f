package cmd

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/gprof-dev/gprof/analysis/report"
	"github.com/gprof-dev/gprof/internal/atomicfile"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "print a summary of a profile: threads, processes, top functions, call tree",
		ArgsUsage: "PROFILE",
		Description: `Prints the whole profile first: its samples and CPU time, the functions with
the most self time (the function was running) and total time (it was on the
stack) over all threads, and the processes, busiest first. Then, per thread
(most samples first), the same lists in percent of the thread's samples.
The busiest --limit threads and processes are shown (10; --all shows every
one, those without samples too), and a last line says what was left out.
The programs one process ran through exec (a shell, a shim, then python)
count as one process, named "bash → python3.12".

Functions inlined into others have rows of their own, and self time goes to
the innermost one; --no-inline counts them as the function they were
compiled into, as perf report and pprof -noinlines do. Reads Gecko,
processed and pprof profiles, perf.data files and Windows ETL traces; names
come from the profile, else from the binaries on disk.

--tree prints the call tree instead (roots are thread names, with the pid
when processes share a name: "sort (pid 4242)"), --format collapsed prints
folded stacks ("thread;outer;...;leaf COUNT", for flamegraph.pl, inferno
and speedscope). --pid, --tid, --thread and
--process narrow any of them to some threads. On a terminal, long lines are
cut to its width (--wide keeps them).

A PROFILE of - reads standard input (gzipped or not).

Examples:
   ./bin/gprof report profile.json.gz
   ./bin/gprof report --thread 'worker*' --tree --depth 6 profile.json.gz
   ./bin/gprof report --format collapsed profile.json.gz | flamegraph.pl > flame.svg
   ./bin/gprof report --limit 3 --top 5 --json-output report.json profile.json.gz
   ./bin/gprof report --no-inline --all profile.json.gz
   jq -r '.all.top_self[0].name' report.json`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "top", Aliases: []string{"n"}, Value: report.DefaultTop, Usage: "list the top `N` functions (-1 for all)"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text, json or collapsed (folded stacks)"},
			&cli.StringFlag{Name: "by", Value: "wall", Usage: "rank functions by `MEASURE`: wall (samples: wall-clock time in a profile recorded with --off-cpu) or cpu (the CPU time the samples carry); both are shown. --tree and collapsed stacks count samples"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the --format output to `FILE` instead of stdout"},
			jsonOutputFlag("the report", " (the text report still goes to stdout)"),
			jsonFlag,
			&cli.IntFlag{Name: "limit", Value: report.DefaultLimit, Usage: "detail the busiest `N` threads and processes in the text report (-1 for all that have samples)"},
			&cli.BoolFlag{Name: "all", Usage: "detail every thread and process in the text report, those without samples too"},
			&cli.BoolFlag{Name: "no-inline", Usage: "count inlined functions as the function they were compiled into, as perf report does"},
			&cli.BoolFlag{Name: "tree", Usage: "print the call tree (text format)"},
			&cli.IntFlag{Name: "depth", Usage: "with --tree, print at most `N` levels below the thread roots (0: all)"},
			&cli.Float64Flag{Name: "min-pct", Value: 0.5, Usage: "with --tree, hide calls under `PCT` percent of all samples"},
			&cli.StringSliceFlag{Name: "pid", Usage: "only threads of process `PID` (repeatable, or comma-separated)"},
			&cli.StringSliceFlag{Name: "tid", Usage: "only thread `TID` (repeatable, or comma-separated)"},
			&cli.StringSliceFlag{Name: "thread", Usage: "only threads named `NAME` (a * glob; repeatable)"},
			&cli.StringSliceFlag{Name: "process", Usage: "only processes named `NAME` (a * glob; repeatable)"},
			&cli.BoolFlag{Name: "wide", Usage: "do not cut long lines to the terminal's width"},
			symbolDirFlag, debuginfodFlag, symbolServerFlag,
		}, reportEventFlags()...),
		Action: runReport,
	}
}

func runReport(c *cli.Context) error {
	in, err := oneInput(c)
	if err != nil {
		return err
	}
	if c.Int("top") == 0 || c.Int("top") < -1 {
		return usagef("--top must be a positive number, or -1 for all")
	}
	if c.Int("limit") == 0 || c.Int("limit") < -1 {
		return usagef("--limit must be a positive number, or -1 for all")
	}
	if by := c.String("by"); by != report.ByWall && by != report.ByCPU {
		return usagef("unknown --by %q: use wall or cpu", by)
	}
	form := c.String("format")
	jsonOut, err := jsonTarget(c)
	if err != nil {
		return err
	}
	if jsonOut == "-" {
		// --json (or --json-output -) is the JSON report on stdout.
		if c.IsSet("format") && form != "json" {
			return usagef("--json prints JSON on stdout; it cannot be combined with --format %s", form)
		}
		form, jsonOut = "json", ""
	}
	switch form {
	case "text", "json", "collapsed":
	default:
		return usagef("unknown --format %q: use text, json or collapsed", form)
	}
	if jsonOut != "" && form != "text" {
		return usagef("--json-output FILE goes with the text report; use -o FILE with --format %s", form)
	}
	if c.Bool("tree") && form != "text" {
		return usagef("--tree prints text; it cannot be combined with --format %s", form)
	}
	if c.Int("depth") < 0 || c.Float64("min-pct") < 0 || c.Float64("min-pct") > 100 {
		return usagef("--depth must be 0 or more and --min-pct from 0 to 100")
	}
	var f report.Filter
	if f.Pids, err = intList(c, "pid"); err != nil {
		return err
	}
	if f.Tids, err = intList(c, "tid"); err != nil {
		return err
	}
	f.Threads, f.Processes = c.StringSlice("thread"), c.StringSlice("process")
	if err := checkSymbolDirs(c); err != nil {
		return err
	}
	out := c.String("output")
	if out != "" && out != "-" {
		if err := checkWritable(out); err != nil {
			return err
		}
	}

	ph, sigs := startFinishing(c, out)
	defer sigs.release()
	ph.set("reading " + inName(in))
	p, _, err := readProfile(in)
	if err != nil {
		ph.done()
		return err
	}
	p = f.Apply(p)
	if len(p.Processes) == 0 {
		ph.done()
		return usagef("no thread matches the --pid, --tid, --thread and --process filters")
	}
	if p, err = selectSamples(c, p); err != nil {
		ph.done()
		return err
	}
	ph.set("resolving names")
	rc, err := remoteClient(c)
	if err != nil {
		return err
	}
	notes := fillSymbols(p, c.StringSlice("symbol-dir"), rc)
	ph.set("summarizing")
	width := 0
	if (out == "" || out == "-") && !c.Bool("wide") && isTerminal(os.Stdout) {
		width = terminalColumns(os.Stdout)
	}
	var write func(io.Writer) error
	switch {
	case c.Bool("latency"):
		if write, err = latencyWriter(c, p, form); err != nil {
			ph.done()
			return err
		}
	case form == "collapsed":
		t := report.BuildTreeOptions(p, report.Options{NoInline: c.Bool("no-inline")})
		write = func(w io.Writer) error { return report.WriteCollapsed(w, t) }
	case c.Bool("tree"):
		t := report.BuildTreeOptions(p, report.Options{NoInline: c.Bool("no-inline")})
		o := report.TreeOptions{Depth: c.Int("depth"), MinPct: c.Float64("min-pct"), Width: width}
		write = func(w io.Writer) error { return report.WriteTree(w, t, o) }
	default:
		r := report.Build(p, report.Options{Top: c.Int("top"), By: c.String("by"), NoInline: c.Bool("no-inline")})
		if jsonOut != "" {
			if err := writeJSONOutput(jsonOut, func(w io.Writer) error { return report.WriteJSON(w, r) }); err != nil {
				ph.done()
				return fmt.Errorf("cannot write %s: %v", jsonOut, err)
			}
		}
		if form == "json" {
			write = func(w io.Writer) error { return report.WriteJSON(w, r) }
		} else {
			o := report.TextOptions{Color: (out == "" || out == "-") && useColor(os.Stdout), Width: width, Limit: c.Int("limit"), All: c.Bool("all")}
			write = func(w io.Writer) error { return report.WriteTextOptions(w, r, o) }
		}
	}
	ph.done()
	printNotices(append(notes, remoteNotes(rc)...))
	if out == "" || out == "-" {
		return write(os.Stdout)
	}
	if err := atomicfile.Write(out, write); err != nil {
		return fmt.Errorf("cannot write %s: %w", out, err)
	}
	return nil
}

// intList reads a repeatable, comma-separated flag of positive integers.
func intList(c *cli.Context, name string) ([]int, error) {
	var out []int
	for _, s := range c.StringSlice(name) {
		for _, f := range strings.Split(s, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			n, err := strconv.Atoi(f)
			if err != nil || n <= 0 {
				return nil, usagef("invalid --%s %q: give a positive number", name, f)
			}
			out = append(out, n)
		}
	}
	return out, nil
}

// terminalColumns returns the width of terminal w, or 0 if unknown.
func terminalColumns(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}
