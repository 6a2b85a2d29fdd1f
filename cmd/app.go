// Package cmd is gprof's command line: it parses flags, wires the pipeline
// from the library packages, and turns errors into one line of advice.
package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// Version is set at build time with -ldflags "-X .../cmd.Version=...".
var Version = "0.1.0-dev"

// Exit codes are part of the interface scripts rely on.
const (
	ExitOK    = 0 // success
	ExitError = 1 // gprof failed; no output was written (or the old one kept)
	ExitUsage = 2 // bad command line
	// ExitRegression: gprof diff ran, and a --fail-if rule was broken.
	ExitRegression = 3
	// ExitCommandFailed: the profile was written, but the launched command
	// failed on its own; its status is the --json summary's exit_code.
	ExitCommandFailed = 4
	// ExitPushFailed: a profile was not delivered to the collector (it
	// could not be reached in time, or it refused the profile); record
	// --push has written its file all the same.
	ExitPushFailed = 5
	// ExitSignal plus the signal's number (130 for SIGINT, 131 SIGQUIT,
	// 143 SIGTERM, 129 SIGHUP): gprof was aborted by that signal, cleaning
	// up first. It is the status shells report for a process the signal
	// killed, so scripts see what they would see without the cleanup.
	ExitSignal = 128
)

// usageError marks errors that are the user's command line, not the world.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitCodeError carries an exit code that is not an error of gprof's own,
// such as a launched command's failure status.
type exitCodeError struct{ code int }

func (e exitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// App returns the command-line definition. The man pages are generated
// from it, so help text written here is the documentation.
func App() *cli.App {
	app := &cli.App{
		Name:    "gprof",
		Usage:   "a sampling profiler that writes Firefox Profiler profiles",
		Version: Version,
		Description: `gprof samples the stacks of every thread of a program, launched or already
running, and writes a profile that opens in the Firefox Profiler
(https://profiler.firefox.com). It can also convert, symbolicate and
summarize profiles without a browser.

Note: GNU binutils installs an unrelated program also called gprof
(/usr/bin/gprof). Build this one to ./bin/gprof and call it by that path.`,
		Commands: []*cli.Command{
			// The order of --help, gprof(1) and its USAGE: the
			// everyday commands first.
			recordCommand(),
			reportCommand(),
			viewCommand(),
			diffCommand(),
			convertCommand(),
			symbolicateCommand(),
			pushCommand(),
			inspectCommand(),
			setupCommand(),
			completionCommand(),
			genManCommand(),
			genCompletionsCommand(),
			helpCommand(),
		},
		// urfave/cli adds --help only along with its own help command,
		// which helpCommand replaces.
		Flags:                []cli.Flag{cli.HelpFlag},
		HideHelpCommand:      true,
		EnableBashCompletion: false,
		Suggest:              true,
		// Repeatable flags take each value whole: a --label or --header
		// value may hold commas (-p and -t split their own).
		DisableSliceFlagSeparator: true,
		// Errors are printed once, by Main, in gprof's own style.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsageError,
	}
	for _, c := range app.Commands {
		c.OnUsageError = onUsageError
	}
	app.UsageText = usageText(app.Commands)
	return app
}

// usageForms are the forms of the commands that have more than the one
// their ArgsUsage gives, or a flag without which they do nothing.
var usageForms = map[string][]string{
	"record":      {"[options] -- COMMAND [ARGS...]", "[options] -p PID [-p PID...]", "[options] -a"},
	"convert":     {"[options] PROFILE -o OUTPUT"},
	"symbolicate": {"[options] PROFILE -o OUTPUT"},
	"diff":        {"[options] BASE NEW", "[options] --base BASE... --new NEW..."},
	"push":        {"[options] --endpoint URL PROFILE..."},
}

// usageText is the USAGE of gprof --help and gprof(1): every visible
// command's forms, in the order of the command list. It is made from the
// list so that a new command cannot be left out of it, as diff,
// symbolicate and inspect once were.
func usageText(cmds []*cli.Command) string {
	var lines []string
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		for _, f := range commandForms(c) {
			lines = append(lines, strings.TrimRight("gprof "+c.Name+" "+f, " "))
		}
	}
	return strings.Join(lines, "\n")
}

// commandForms are c's forms after its name: usageForms', else its
// ArgsUsage, after "[options]" when it has flags of its own.
func commandForms(c *cli.Command) []string {
	if f, ok := usageForms[c.Name]; ok {
		return f
	}
	form := c.ArgsUsage
	if len(c.Flags) > 0 {
		form = strings.TrimSpace("[options] " + form)
	}
	return []string{form}
}

// onUsageError keeps flag errors to gprof's one line instead of the whole
// help text.
func onUsageError(_ *cli.Context, err error, _ bool) error { return usageError{err} }

// Main runs gprof with args (including the program name) and returns the
// process exit code.
func Main(args []string) int {
	app := App()
	app.Writer = os.Stdout
	app.ErrWriter = os.Stderr
	err := app.Run(interspersed(app, args))
	return printError(os.Stderr, err)
}

// printError prints err as one line and returns the exit code for it.
func printError(w io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	var ec exitCodeError
	if errors.As(err, &ec) {
		return ec.code
	}
	code := ExitError
	var ue usageError
	if errors.As(err, &ue) || isFlagError(err) {
		code = ExitUsage
	}
	msg := strings.TrimSpace(err.Error())
	// urfave/cli words an unknown command as a missing help topic.
	msg = strings.Replace(msg, "No help topic for", "unknown command", 1)
	msg = flagNames(msg)
	// One line: multi-line messages from libraries are folded.
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " ")), " ")
	if code == ExitUsage && !strings.Contains(msg, "--help") {
		msg += " (see 'gprof --help')"
	}
	fmt.Fprintf(w, "%s %s\n", errorPrefix(w), msg)
	return code
}

// flagNames rewrites the flag package's names of unknown, incomplete or
// invalid flags, which always carry one dash ("-bogus"), the way they are
// typed: two dashes for a long flag.
func flagNames(msg string) string {
	msg = longFlag.ReplaceAllString(msg, "$1--$2")
	return strings.Replace(msg, "flag provided but not defined: ", "unknown flag ", 1)
}

var longFlag = regexp.MustCompile(`(flag provided but not defined: |flag needs an argument: |for flag )-([A-Za-z0-9][-A-Za-z0-9]+)`)

// isFlagError recognizes the flag package's own parse errors, which
// urfave/cli returns unwrapped.
func isFlagError(err error) bool {
	s := err.Error()
	for _, p := range []string{"flag provided but not defined", "invalid value", "flag needs an argument", "No help topic", "Required flag"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// errorPrefix is "gprof: error:", in red on a terminal unless NO_COLOR.
func errorPrefix(w io.Writer) string {
	if useColor(w) {
		return "gprof: \x1b[31merror:\x1b[0m"
	}
	return "gprof: error:"
}

// useColor reports whether w is a terminal that wants color
// (https://no-color.org).
func useColor(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(w)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalRows returns the height of terminal w, or 0 if unknown.
func terminalRows(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	_, rows, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return rows
}

// interspersed lets flags follow file arguments ("gprof convert IN -o OUT")
// by moving them in front, as urfave/cli v2 stops at the first argument.
// record is left alone: there the first argument starts the command line
// of the program to profile.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	var c *cli.Command
	for _, cmd := range app.Commands {
		if cmd.HasName(args[1]) {
			c = cmd
		}
	}
	if c == nil || c.Name == "record" {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range c.Flags {
		df, ok := f.(cli.DocGenerationFlag)
		for _, n := range f.Names() {
			takesValue[n] = ok && df.TakesValue()
		}
	}
	flags := []string{}
	var rest []string
	tail := args[2:]
	for i := 0; i < len(tail); i++ {
		a := tail[i]
		if a == "--" {
			rest = append(rest, tail[i:]...)
			break
		}
		name := strings.TrimLeft(a, "-")
		name, _, hasValue := strings.Cut(name, "=")
		tv, known := takesValue[name]
		if !strings.HasPrefix(a, "-") || a == "-" || !known {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		if tv && !hasValue && i+1 < len(tail) {
			i++
			flags = append(flags, tail[i])
		}
	}
	out := append([]string{args[0], args[1]}, flags...)
	return append(out, rest...)
}
