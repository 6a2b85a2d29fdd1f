package cmd

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/gprof-dev/gprof/analysis/diff"
	"github.com/gprof-dev/gprof/analysis/report"
	"github.com/gprof-dev/gprof/view"
)

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "compare two profiles, or two sets of repeated runs, and gate on regressions",
		ArgsUsage: "BASE NEW",
		Description: `Compares a base profile with a new one by function (share of samples, self
and total, and time), by thread name and by process name, and lists the
biggest regressions and improvements. Each side may be several profiles of
repeated runs (--base FILE --base FILE... --new FILE...); a change within
the run-to-run spread, or within the sampling error of the sample counts,
is marked "~" and reported as noise, not as a regression.

--fail-if RULE makes it a gate for CI: when a rule is broken by a change
beyond the noise, gprof prints the failing rules and exits 3. Each rule's
line shows the figure it judged, and a function a rule broke is listed
first under Regressions, with the rule beside it. RULE is one of
   self:FUNC>+Npp    FUNC's share of samples (self) grew by more than N points
   total:FUNC>+Npp   FUNC's share of samples on the stack grew by more than N points
   self:FUNC>+N%     FUNC's self time grew by more than N percent
   total:FUNC>+N%    FUNC's total time grew by more than N percent
   cpu>+N%           the profile's CPU time grew by more than N percent
FUNC is a function name, or a glob with * ('self:*>+5pp': any function).
A function's self share leaves out the samples in [kernel] (kernel time
with no kernel stack), whose share follows the machine's load.

Examples:
   ./bin/gprof diff before.json.gz after.json.gz
   ./bin/gprof diff --base b1.json.gz --base b2.json.gz --new n1.json.gz --new n2.json.gz \
       --fail-if 'self:*>+5pp' --fail-if 'cpu>+10%'
   ./bin/gprof diff --json before.json.gz after.json.gz | jq '.functions[0]'
   ./bin/gprof diff --view before.json.gz after.json.gz   # the Firefox Profiler's comparison view`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "base", Usage: "a base profile `FILE` (repeatable: repeated runs)"},
			&cli.StringSliceFlag{Name: "new", Usage: "a new profile `FILE` (repeatable: repeated runs)"},
			&cli.StringSliceFlag{Name: "fail-if", Usage: "exit 3 when `RULE` is broken beyond the noise (repeatable; see above)"},
			&cli.IntFlag{Name: "top", Aliases: []string{"n"}, Value: 10, Usage: "list at most `N` functions per list (-1 for all)"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON (schema version in the \"version\" field)"},
			&cli.BoolFlag{Name: "view", Usage: "then open the first base and new profiles in the Firefox Profiler's comparison view, served as 'gprof view' serves a profile (until Ctrl-C)"},
			&cli.BoolFlag{Name: "no-open", Usage: "with --view, print the URL instead of opening a browser"},
			&cli.StringFlag{Name: "profiler-url", Value: view.DefaultProfilerURL, EnvVars: []string{profilerURLEnv}, Usage: "with --view, the Firefox Profiler front-end at `URL` (also $" + profilerURLEnv + ")"},
			&cli.StringFlag{Name: "by", Value: "wall", Usage: "compare functions by `MEASURE`: wall (shares of samples: wall-clock time in profiles recorded with --off-cpu) or cpu (shares of the CPU time the samples carry)"},
			symbolDirFlag, debuginfodFlag, symbolServerFlag,
		},
		Action: runDiff,
	}
}

func runDiff(c *cli.Context) error {
	base, next := c.StringSlice("base"), c.StringSlice("new")
	switch {
	case len(base) == 0 && len(next) == 0 && c.NArg() == 2:
		base, next = []string{c.Args().Get(0)}, []string{c.Args().Get(1)}
	case len(base) > 0 && len(next) > 0 && c.NArg() == 0:
	case c.NArg() > 0 && (len(base) > 0 || len(next) > 0):
		return usagef("give BASE NEW, or --base and --new, not both")
	default:
		return usagef("give two profiles (gprof diff BASE NEW), or --base FILE and --new FILE")
	}
	if c.Int("top") == 0 || c.Int("top") < -1 {
		return usagef("--top must be a positive number, or -1 for all")
	}
	if by := c.String("by"); by != report.ByWall && by != report.ByCPU {
		return usagef("unknown --by %q: use wall or cpu", by)
	}
	if err := checkSymbolDirs(c); err != nil {
		return err
	}
	rc, err := remoteClient(c)
	if err != nil {
		return err
	}
	var rules []diff.Rule
	for _, s := range c.StringSlice("fail-if") {
		r, err := diff.ParseRule(s)
		if err != nil {
			return usageError{err}
		}
		rules = append(rules, r)
	}
	ph, sigs := startFinishing(c, "")
	defer sigs.release()
	var notes []string
	read := func(files []string) ([]diff.Input, error) {
		var out []diff.Input
		for _, f := range files {
			ph.set("reading " + f)
			p, _, err := readProfile(f)
			if err != nil {
				return nil, err
			}
			ph.set("resolving names in " + f)
			notes = append(notes, fillSymbols(p, c.StringSlice("symbol-dir"), rc)...)
			out = append(out, diff.Input{File: f, Profile: p})
		}
		return out, nil
	}
	b, err := read(base)
	if err != nil {
		ph.done()
		return err
	}
	n, err := read(next)
	ph.done()
	if err != nil {
		return err
	}
	printNotices(append(notes, remoteNotes(rc)...))
	res := diff.CompareBy(b, n, rules, c.String("by"))
	if c.Bool("json") {
		err = diff.WriteJSON(os.Stdout, res)
	} else {
		err = diff.WriteText(os.Stdout, res, c.Int("top"), report.Printable)
	}
	if err != nil {
		return err
	}
	if c.Bool("view") {
		sigs.release() // serving ends with Ctrl-C, not an abort
		o := viewOptions{address: "127.0.0.1", noOpen: c.Bool("no-open"), profilerURL: c.String("profiler-url"), symbolDirs: c.StringSlice("symbol-dir")}
		if err := serveComparison(c.Context, b[0], n[0], o); err != nil {
			return err
		}
	}
	for _, r := range res.Rules {
		if r.Matched == 0 {
			// A gate that matches nothing never fails: most likely a
			// misspelt name, which CI would otherwise pass silently.
			return usagef("--fail-if %q matches no function in either profile: check the name ('gprof report --top -1 PROFILE' lists them; * is a glob)", r.Rule)
		}
	}
	if res.Failed {
		return exitCodeError{ExitRegression}
	}
	return nil
}
