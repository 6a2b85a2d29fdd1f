package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/gprof-dev/gprof/format"
	"github.com/gprof-dev/gprof/format/otlp"
	"github.com/gprof-dev/gprof/internal/atomicfile"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/symbolize"
	"github.com/gprof-dev/gprof/symbolize/remote"

	// Linked in to read perf.data and ETL files (format.Register).
	_ "github.com/gprof-dev/gprof/record/etl"
	_ "github.com/gprof-dev/gprof/record/perfdata"
)

var symbolDirFlag = &cli.StringSliceFlag{Name: "symbol-dir", Usage: "also look for debug files in `DIR` (repeatable)"}

// Servers that keep debug files by identity, asked for what is not on
// this machine (see remoteClient).
var (
	debuginfodFlag   = &cli.StringSliceFlag{Name: "debuginfod", Usage: "fetch ELF debug files (and binaries) that are not on this machine, by build-id, from the debuginfod server at `URL` (repeatable; added to $DEBUGINFOD_URLS)"}
	symbolServerFlag = &cli.StringSliceFlag{Name: "symbol-server", Usage: "fetch PDBs that are not on this machine from the symbol server at `URL`, in Microsoft's layout (URL/NAME.pdb/GUIDAGE/NAME.pdb; repeatable)"}
)

// outputFlag is -o for convert and symbolicate. It is checked by
// outputFile rather than marked Required, which would print the whole help.
var outputFlag = &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` (gzip when it ends in .gz; - for standard output, uncompressed); required"}

func convertCommand() *cli.Command {
	return &cli.Command{
		Name:      "convert",
		Usage:     "convert a profile to the Firefox Profiler's processed format, or to pprof or OTLP",
		ArgsUsage: "PROFILE",
		Description: `Reads a Gecko profile (gprof's own or one Firefox wrote; gzipped or not) or a
processed profile, and writes the Firefox Profiler's processed format, fully
symbolicated: function names, source files and lines, and inline frames. The
output opens on profiler.firefox.com with names and no symbol server.

Names come from those stored in the profile, and for any address still
unknown, from the binaries on disk (and their debug files: build-id
directory, .gnu_debuglink, --symbol-dir).

A PROFILE of - reads standard input (gzipped or not), and -o - writes to
standard output (uncompressed).

With --to pprof it writes a gzipped profile.proto for 'go tool pprof' and
the tools that read pprof (samples and CPU time as values, thread and
process as labels, mappings with build IDs, names with inline frames).
With --to otlp it writes the OTLP profiles request 'gprof push' would send
(see 'gprof push --help'; --service-name and --label as there): protobuf,
or OTLP JSON when the output's name ends in .json or .json.gz.

It also reads pprof files (Go's runtime/pprof CPU profiles and anything else
that writes the format), so they open in the Firefox Profiler; perf.data
files that Linux 'perf record' wrote (-g, or --call-graph dwarf, whose
stacks gprof unwinds itself; pipe mode and -z too), whose binaries are found
by path, or in perf's build-id cache (~/.debug) when the path now holds
another build (only the first sampling event of a recording is converted);
and Windows ETL traces (xperf, WPR, PerfView), on any OS: a kernel trace
holds the whole system, and --pid and --name keep some of its processes.

Examples:
   ./bin/gprof convert profile.json.gz -o processed.json.gz
   ./bin/gprof convert - -o - < profile.json.gz | gzip > processed.json.gz
   ./bin/gprof convert profile.json.gz --to pprof -o profile.pb.gz && go tool pprof -top profile.pb.gz
   ./bin/gprof convert cpu.pprof -o processed.json.gz   # a Go CPU profile
   ./bin/gprof convert perf.data -o processed.json.gz   # perf record -g
   ./bin/gprof convert profile.json.gz --to otlp -o request.json   # what 'gprof push' sends`,
		Flags: append([]cli.Flag{
			outputFlag,
			&cli.StringFlag{Name: "to", Value: "processed", Usage: "output `FORMAT`: processed (the Firefox Profiler's, names applied), gecko, pprof (always gzipped), or otlp (the request 'gprof push' sends: protobuf, or OTLP JSON when the name ends in .json or .json.gz)"},
			symbolDirFlag, debuginfodFlag, symbolServerFlag,
			convertPidFlag, convertNameFlag,
		}, otlpFlags()...),
		Action: func(c *cli.Context) error {
			out, err := outputFile(c)
			if err != nil {
				return err
			}
			in, err := oneInput(c)
			if err != nil {
				return err
			}
			to := format.Kind(c.String("to"))
			if to != format.Processed && to != format.Gecko && to != format.PProf && to != kindOTLP {
				return usagef("unknown --to %q: use processed, gecko, pprof or otlp", to)
			}
			if to != kindOTLP && (c.IsSet("service-name") || c.IsSet("label")) {
				return usagef("--service-name and --label go with --to otlp")
			}
			return rewriteProfile(c, in, out, false, func(format.Kind) format.Kind { return to }, func(p *profile.Profile) (*profile.Profile, error) { return filterProcesses(c, p) })
		},
	}
}

func symbolicateCommand() *cli.Command {
	return &cli.Command{
		Name:      "symbolicate",
		Usage:     "resolve a profile's names again from binaries and debug files",
		ArgsUsage: "PROFILE",
		Description: `Resolves every native address of a Gecko or processed profile from the
binaries on disk and --symbol-dir directories, and writes the profile back
in the same format (or --format). Names that can no longer be resolved keep
what the profile had. A PROFILE of - reads standard input, and -o -
writes to standard output (uncompressed).

Examples:
   # the binaries gained debug info since recording
   ./bin/gprof symbolicate profile.json.gz --symbol-dir ./debug -o resolved.json.gz`,
		Flags: []cli.Flag{
			outputFlag,
			&cli.StringFlag{Name: "format", Usage: "output `FORMAT`: gecko or processed (default: the input's)"},
			symbolDirFlag, debuginfodFlag, symbolServerFlag,
		},
		Action: func(c *cli.Context) error {
			out, err := outputFile(c)
			if err != nil {
				return err
			}
			in, err := oneInput(c)
			if err != nil {
				return err
			}
			kind := format.Kind(c.String("format"))
			if kind != "" && kind != format.Gecko && kind != format.Processed {
				return usagef("unknown --format %q: use gecko or processed", kind)
			}
			return rewriteProfile(c, in, out, true, func(in format.Kind) format.Kind {
				if kind == "" {
					return in
				}
				return kind
			}, nil)
		},
	}
}

// rewriteProfile is convert and symbolicate: it reads profile in, resolves
// its names, and writes it to out in the format kind picks from the
// input's. fresh resolves every name again, keeping the old ones that no
// longer resolve; otherwise only names the profile lacks are looked up.
// filter, when not nil, narrows the profile before names are resolved.
func rewriteProfile(c *cli.Context, in, out string, fresh bool, kind func(format.Kind) format.Kind, filter func(*profile.Profile) (*profile.Profile, error)) error {
	if err := checkSymbolDirs(c); err != nil {
		return err
	}
	rc, err := remoteClient(c)
	if err != nil {
		return err
	}
	ph, sigs := startFinishing(c, out)
	defer sigs.release()
	if err := checkWritable(out); err != nil {
		return err
	}
	defer ph.done()
	ph.set("reading " + inName(in))
	p, inKind, err := readProfile(in)
	if err != nil {
		return err
	}
	if filter != nil {
		if p, err = filter(p); err != nil {
			return err
		}
	}
	old := p.Symbols
	if fresh {
		p.Symbols = nil
	}
	ph.set("resolving names")
	notes := fillSymbols(p, c.StringSlice("symbol-dir"), rc)
	if fresh {
		if p.Symbols == nil {
			p.Symbols = &profile.SymbolTable{}
		}
		p.Symbols.AddMissing(old)
	}
	ph.set("writing " + outName(out))
	if k := kind(inKind); k == kindOTLP {
		err = writeOTLP(c, out, p)
	} else {
		err = writeProfile(out, p, k)
	}
	ph.done()
	printNotices(append(notes, remoteNotes(rc)...))
	return err
}

// kindOTLP is convert's --to otlp: the request 'gprof push' sends, which
// is not a profile format gprof reads.
const kindOTLP format.Kind = "otlp"

// writeOTLP writes p as an OTLP profiles request: OTLP JSON to a name
// ending in .json (or .json.gz), protobuf otherwise (and to standard
// output).
func writeOTLP(c *cli.Context, path string, p *profile.Profile) error {
	o, err := otlpOptions(c)
	if err != nil {
		return err
	}
	req := otlp.Build(p, o)
	if path == "-" {
		_, err := os.Stdout.Write(req.MarshalProto())
		return err
	}
	if err := otlp.WriteFile(path, req); err != nil {
		return fmt.Errorf("cannot write %s: %s", path, strings.TrimPrefix(err.Error(), path+": "))
	}
	return nil
}

func oneInput(c *cli.Context) (string, error) {
	switch c.NArg() {
	case 1:
		return c.Args().First(), nil
	case 0:
		return "", usagef("give a profile file, e.g. 'gprof %s profile.json.gz'", c.Command.Name)
	}
	return "", usagef("give one profile file, got %d (flags go before the file name)", c.NArg())
}

// outputFile returns -o, which convert and symbolicate need.
func outputFile(c *cli.Context) (string, error) {
	out := c.String("output")
	if out == "" {
		what := "an output file with -o"
		if c.NArg() == 0 {
			what = "a profile and an output file"
		}
		return "", usagef("give %s, e.g. 'gprof %s profile.json.gz -o out.json.gz'", what, c.Command.Name)
	}
	return out, nil
}

// startFinishing sets up convert, symbolicate and report, which have no
// recording to stop: any signal aborts them at once, clearing the phase
// line and leaving no temporary file.
func startFinishing(c *cli.Context, out string) (*phases, *signals) {
	_, sigs := catchSignals(c.Context, false)
	sigs.writing(out)
	ph := newPhases(os.Stderr, false)
	sigs.onAbort(ph.done)
	return ph, sigs
}

// inName and outName are how messages name a file, where '-' is standard
// input or output.
func inName(path string) string {
	if path == "-" {
		return "standard input"
	}
	return path
}

func outName(path string) string {
	if path == "-" {
		return "standard output"
	}
	return path
}

// readProfile reads the profile at path; '-' is standard input, gzipped
// or not.
func readProfile(path string) (*profile.Profile, format.Kind, error) {
	if path == "-" {
		if isTerminal(os.Stdin) {
			return nil, "", errors.New("standard input is a terminal, not a profile: pipe one in, e.g. 'gprof report - < profile.json.gz'")
		}
		p, k, err := format.Reader(os.Stdin)
		if err != nil {
			return nil, k, fmt.Errorf("cannot read profile from standard input: %v", err)
		}
		return p, k, nil
	}
	p, k, err := format.File(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, k, fmt.Errorf("%s does not exist", path)
		}
		return nil, k, fmt.Errorf("cannot read profile %v", err)
	}
	return p, k, nil
}

// fillSymbols resolves addresses the profile has no names for from files on
// disk, and from the servers rc names (nil: none). Failing to find a
// binary is normal (another machine's profile) and not an error: those
// frames stay addresses. It returns notices for the end of the command:
// debug files skipped as another build's (and remoteNotes(rc) says what
// the servers did).
func fillSymbols(p *profile.Profile, dirs []string, rc *remote.Client) []string {
	st, _ := symbolize.Profile(p, symbolize.Options{SymbolDirs: dirs, Remote: rc})
	return st.RejectedDebugFiles()
}

// remoteClient returns the client for the debuginfod servers that
// $DEBUGINFOD_URLS and --debuginfod name and the --symbol-server ones, or
// nil when there are none. Files are cached where elfutils' client keeps
// them ($DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client) and, for
// PDBs, in the user's cache directory (~/.cache/gprof/symbols).
func remoteClient(c *cli.Context) (*remote.Client, error) {
	var debuginfod []string
	for _, u := range remote.EnvDebuginfodURLs() {
		// elfutils also reads file:// and other schemes; gprof speaks
		// HTTP only, and says nothing of the others: the variable is
		// shared with other tools.
		if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
			debuginfod = append(debuginfod, u)
		}
	}
	for _, f := range []string{"debuginfod", "symbol-server"} {
		for _, u := range c.StringSlice(f) {
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				return nil, usagef("--%s %s is not an http:// or https:// URL", f, u)
			}
		}
	}
	debuginfod = append(debuginfod, c.StringSlice("debuginfod")...)
	return remote.New(remote.Config{
		Debuginfod:    debuginfod,
		SymbolServers: c.StringSlice("symbol-server"),
		Timeout:       remote.EnvTimeout(),
	}), nil
}

// remoteNotes says what rc fetched, in one line, and which servers it
// could not reach, one line each.
func remoteNotes(rc *remote.Client) []string {
	var out []string
	if s := rc.Summary(); s != "" {
		out = append(out, s)
	}
	for _, d := range rc.Down() {
		out = append(out, "gave up on server "+d+" for this run; names only it has are missing")
	}
	return out
}

// printNotices prints a command's end-of-run notices, one line each.
func printNotices(notes []string) {
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "gprof: "+n)
	}
}

// checkSymbolDirs refuses a --symbol-dir that is not a directory: given
// explicitly, a missing one is a mistake on the command line that would
// otherwise only show, much later, as names missing.
func checkSymbolDirs(c *cli.Context) error {
	for _, d := range c.StringSlice("symbol-dir") {
		st, err := os.Stat(d)
		switch {
		case os.IsNotExist(err):
			return usagef("--symbol-dir %s does not exist", d)
		case err != nil:
			return fmt.Errorf("cannot read --symbol-dir %s: %v", d, err)
		case !st.IsDir():
			return usagef("--symbol-dir %s is not a directory", d)
		}
	}
	return nil
}

// checkWritable fails early, before any long work, when the output cannot
// be written, so that a long recording is not lost at the end.
func checkWritable(path string) error {
	if path == "-" {
		return nil
	}
	if err := atomicfile.Check(path); err != nil {
		msg := "cannot write " + err.Error()
		if errors.Is(err, fs.ErrPermission) {
			msg += "; choose another --output"
		}
		return errors.New(msg)
	}
	return nil
}

// writeProfile writes p in the given format: '-' is standard output
// (uncompressed); a file is replaced atomically, gzipped when its name
// ends in .gz; a device or FIFO is written in place. Callers check that
// path is writable before the long work that precedes writing
// (checkWritable).

func writeProfile(path string, p *profile.Profile, kind format.Kind) error {
	if err := format.WriteFile(path, p, kind); err != nil {
		return fmt.Errorf("cannot write %s: %s", outName(path), strings.TrimPrefix(err.Error(), path+": "))
	}
	return nil
}
