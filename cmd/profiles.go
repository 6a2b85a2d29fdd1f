package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/gprof-dev/gprof/format"
	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/format/load"
	"github.com/gprof-dev/gprof/format/processed"
	"github.com/gprof-dev/gprof/format/report"
	"github.com/gprof-dev/gprof/symbolize"
)

var symbolDirFlag = &cli.StringSliceFlag{Name: "symbol-dir", Usage: "also look for debug files in `DIR` (repeatable)"}

func convertCommand() *cli.Command {
	return &cli.Command{
		Name:      "convert",
		Usage:     "convert a profile to the Firefox Profiler's processed format",
		ArgsUsage: "PROFILE",
		Description: `Reads a Gecko profile (gprof's own or one Firefox wrote; gzipped or not) or a
processed profile, and writes the Firefox Profiler's processed format, fully
symbolicated: function names, source files and lines, and inline frames. The
output opens on profiler.firefox.com with names and no symbol server.

Names come from those stored in the profile, and for any address still
unknown, from the binaries on disk (and their debug files: build-id
directory, .gnu_debuglink, --symbol-dir).

Examples:
   ./bin/gprof convert profile.json.gz -o processed.json.gz`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "write to `FILE` (gzip when it ends in .gz)"},
			symbolDirFlag,
		},
		Action: func(c *cli.Context) error {
			in, err := oneInput(c)
			if err != nil {
				return err
			}
			if err := checkWritable(c.String("output")); err != nil {
				return err
			}
			ph := newPhases(os.Stderr, false)
			defer ph.done()
			ph.set("reading " + in)
			p, _, err := readProfile(in)
			if err != nil {
				return err
			}
			ph.set("resolving names")
			fillSymbols(p, c.StringSlice("symbol-dir"))
			ph.set("writing " + c.String("output"))
			return writeProfile(c.String("output"), p, load.Processed)
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
what the profile had.

Examples:
   # the binaries gained debug info since recording
   ./bin/gprof symbolicate profile.json.gz --symbol-dir ./debug -o resolved.json.gz`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "write to `FILE` (gzip when it ends in .gz)"},
			&cli.StringFlag{Name: "format", Usage: "output `FORMAT`: gecko or processed (default: the input's)"},
			symbolDirFlag,
		},
		Action: func(c *cli.Context) error {
			in, err := oneInput(c)
			if err != nil {
				return err
			}
			kind := load.Kind(c.String("format"))
			if kind != "" && kind != load.Gecko && kind != load.Processed {
				return usagef("unknown --format %q: use gecko or processed", kind)
			}
			if err := checkWritable(c.String("output")); err != nil {
				return err
			}
			ph := newPhases(os.Stderr, false)
			defer ph.done()
			ph.set("reading " + in)
			p, inKind, err := readProfile(in)
			if err != nil {
				return err
			}
			if kind == "" {
				kind = inKind
			}
			old := p.Symbols
			p.Symbols = nil
			ph.set("resolving names")
			fillSymbols(p, c.StringSlice("symbol-dir"))
			keepUnresolved(p, old)
			ph.set("writing " + c.String("output"))
			return writeProfile(c.String("output"), p, kind)
		},
	}
}

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "print a summary of a profile: threads and top functions",
		ArgsUsage: "PROFILE",
		Description: `Prints, per thread, the samples and CPU time, and the functions with the
most self time (the function was running) and total time (it was on the
stack), in percent of the thread's samples. Reads Gecko and processed
profiles; names come from the profile, else from the binaries on disk.

Examples:
   ./bin/gprof report profile.json.gz
   ./bin/gprof report --top 5 --json-output report.json profile.json.gz
   jq -r '.all.top_self[0].name' report.json`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "top", Aliases: []string{"n"}, Value: report.DefaultTop, Usage: "list the top `N` functions (-1 for all)"},
			jsonOutputFlag("the report", ""),
			jsonFlag,
			symbolDirFlag,
		},
		Action: func(c *cli.Context) error {
			in, err := oneInput(c)
			if err != nil {
				return err
			}
			if c.Int("top") == 0 || c.Int("top") < -1 {
				return usagef("--top must be a positive number, or -1 for all")
			}
			jsonOut, err := jsonTarget(c)
			if err != nil {
				return err
			}
			ph := newPhases(os.Stderr, false)
			ph.set("reading " + in)
			p, _, err := readProfile(in)
			if err != nil {
				ph.done()
				return err
			}
			ph.set("resolving names")
			fillSymbols(p, c.StringSlice("symbol-dir"))
			ph.set("summarizing")
			r := report.Build(p, report.Options{Top: c.Int("top")})
			ph.done()
			if jsonOut != "" {
				// A file leaves stdout to the text report.
				err := writeJSONOutput(jsonOut, func(w io.Writer) error { return report.WriteJSON(w, r) })
				if err != nil {
					err = fmt.Errorf("write %s: %v", jsonOut, err)
				}
				if err != nil || jsonOut == "-" {
					return err
				}
			}
			if useColor(os.Stdout) {
				return report.WriteTextColor(os.Stdout, r)
			}
			return report.WriteText(os.Stdout, r)
		},
	}
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

func readProfile(path string) (*format.Profile, load.Kind, error) {
	p, k, err := load.File(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, k, fmt.Errorf("%s does not exist", path)
		}
		return nil, k, fmt.Errorf("cannot read profile %v", err)
	}
	return p, k, nil
}

// fillSymbols resolves addresses the profile has no names for from files on
// disk. Failing to find a binary is normal (another machine's profile) and
// not an error: those frames stay addresses.
func fillSymbols(p *format.Profile, dirs []string) {
	symbolize.Profile(p, symbolize.Options{SymbolDirs: dirs})
}

// keepUnresolved copies entries of old that the fresh symbol table lacks.
func keepUnresolved(p *format.Profile, old *format.SymbolTable) {
	if old == nil {
		return
	}
	if p.Symbols == nil {
		p.Symbols = &format.SymbolTable{}
	}
	for k, ls := range old.Libs {
		for addr, frames := range ls.Addresses {
			if p.Symbols.Lookup(k, addr) == nil {
				p.Symbols.Add(k, addr, frames)
			}
		}
	}
}

// writeProfile writes p in the given format. Callers check that path is
// writable before the long work that precedes writing (checkWritable).
func writeProfile(path string, p *format.Profile, kind load.Kind) error {
	var err error
	switch kind {
	case load.Processed:
		err = processed.WriteFile(path, p)
	default:
		err = gecko.WriteFile(path, p)
	}
	if err != nil {
		return fmt.Errorf("write %s: %s", path, strings.TrimPrefix(err.Error(), path+": "))
	}
	return nil
}
