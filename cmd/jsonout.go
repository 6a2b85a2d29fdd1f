package cmd

import (
	"bufio"
	"encoding/json"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/gprof-dev/gprof/internal/atomicfile"
)

// recordSummaryVersion is the version of record's JSON summary schema
// (recordSummary). Like report.Version it changes only when a field is
// removed or changes meaning, not when one is added.
const recordSummaryVersion = 1

// jsonOutputFlag is --json-output, shared by record and report. The
// schemas are documented in docs/formats.md, "JSON output", and a test
// keeps the two in step.
func jsonOutputFlag(what, note string) cli.Flag {
	return &cli.StringFlag{Name: "json-output", Usage: "write " + what + " as JSON to `FILE` (- for stdout) in one piece when done" + note + "; schema in docs/formats.md, \"JSON output\""}
}

// jsonFlag is --json-output's older, stdout-only spelling.
var jsonFlag = &cli.BoolFlag{Name: "json", Usage: "the same as --json-output - (on stdout)"}

// jsonTarget returns where --json-output and --json send the JSON: "" for
// nowhere, "-" for stdout, or a file name, whose directory is checked now
// so that a long recording is not lost to a typo at the end.
func jsonTarget(c *cli.Context) (string, error) {
	path := c.String("json-output")
	if c.Bool("json") {
		if path != "" && path != "-" {
			return "", usagef("give --json or --json-output FILE, not both")
		}
		path = "-"
	}
	if c.IsSet("json-output") && path == "" {
		return "", usagef("--json-output needs a file name, or - for stdout")
	}
	if path != "" && path != "-" {
		if err := checkWritable(path); err != nil {
			return "", err
		}
	}
	return path, nil
}

// writeJSONOutput writes what write produces to path: stdout for "-",
// else a temporary file in path's directory renamed over path once
// complete, so a reader sees either no file, the old one, or all of the
// new one.
func writeJSONOutput(path string, write func(io.Writer) error) error {
	if path == "-" {
		w := bufio.NewWriter(os.Stdout)
		if err := write(w); err != nil {
			return err
		}
		return w.Flush()
	}
	return atomicfile.Write(path, write)
}

// encodeJSON returns a write function for writeJSONOutput that encodes v
// indented, with <, > and & kept as they are.
func encodeJSON(v any) func(io.Writer) error {
	return func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		e.SetEscapeHTML(false)
		return e.Encode(v)
	}
}
