package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
)

// genManCommand writes the man pages. It is hidden: the pages are
// committed under man/, and a test fails when they drift from the flags.
func genManCommand() *cli.Command {
	return &cli.Command{
		Name:      "gen-man",
		Usage:     "write man pages to DIR",
		ArgsUsage: "DIR",
		Hidden:    true,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("gen-man needs one directory")
			}
			return WriteManPages(c.Args().First())
		},
	}
}

// ManPages returns gprof's man pages by file name: gprof.1 and one
// gprof-COMMAND.1 per visible subcommand.
func ManPages() map[string]string {
	app := App()
	pages := map[string]string{"gprof.1": appManPage(app)}
	for _, c := range app.Commands {
		if c.Hidden {
			continue
		}
		pages["gprof-"+c.Name+".1"] = commandManPage(app, c)
	}
	return pages
}

// WriteManPages writes ManPages into dir, which must exist: creating it
// would hide a mistyped name.
func WriteManPages(dir string) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a directory; create it first (mkdir %s)", dir, dir)
	}
	for name, text := range ManPages() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func manHeader(b *strings.Builder, title, version string) {
	// No date: the pages must be reproducible from the sources alone.
	fmt.Fprintf(b, ".TH %s 1 \"\" \"gprof %s\" \"gprof manual\"\n", strings.ToUpper(title), roff(version))
}

func appManPage(app *cli.App) string {
	var b strings.Builder
	manHeader(&b, "gprof", app.Version)
	b.WriteString(".SH NAME\ngprof \\- " + roff(app.Usage) + "\n")
	b.WriteString(".SH SYNOPSIS\n")
	for _, l := range strings.Split(app.UsageText, "\n") {
		b.WriteString(".B " + roff(l) + "\n.br\n")
	}
	b.WriteString(".SH DESCRIPTION\n")
	paragraphs(&b, app.Description)
	b.WriteString(".SH COMMANDS\n")
	for _, c := range app.Commands {
		if c.Hidden {
			continue
		}
		fmt.Fprintf(&b, ".TP\n.B %s\n%s (see \\fBgprof\\-%s\\fR(1))\n", roff(c.Name), roff(c.Usage), roff(c.Name))
	}
	b.WriteString(".SH OPTIONS\n.TP\n.B \\-\\-help, \\-h\nshow help\n.TP\n.B \\-\\-version, \\-v\nprint the version\n")
	b.WriteString(".SH EXIT STATUS\n")
	b.WriteString(".TP\n.B 0\nsuccess\n.TP\n.B 1\nan error; no output file was written, and an existing one is left as it was\n")
	b.WriteString(".TP\n.B 2\nthe command line was wrong\n")
	b.WriteString(".TP\n.B 128+N\naborted by signal N (130 for SIGINT, 131 SIGQUIT, 143 SIGTERM); nothing was written\n")
	b.WriteString(".PP\n\\fBgprof record \\-\\- COMMAND\\fR exits with the command's status when the command fails.\n")
	b.WriteString(".SH ENVIRONMENT\n.TP\n.B NO_COLOR\nwhen set, error messages are never colored\n")
	b.WriteString(".SH SEE ALSO\n")
	var refs []string
	for _, c := range app.Commands {
		if !c.Hidden {
			refs = append(refs, "\\fBgprof\\-"+roff(c.Name)+"\\fR(1)")
		}
	}
	refs = append(refs, "\\fBperf\\fR(1)")
	b.WriteString(strings.Join(refs, ", ") + "\n")
	return b.String()
}

func commandManPage(app *cli.App, c *cli.Command) string {
	var b strings.Builder
	manHeader(&b, "gprof-"+c.Name, app.Version)
	fmt.Fprintf(&b, ".SH NAME\ngprof\\-%s \\- %s\n", roff(c.Name), roff(c.Usage))
	b.WriteString(".SH SYNOPSIS\n")
	for _, f := range commandForms(c) {
		fmt.Fprintf(&b, ".B gprof %s\n%s\n.br\n", roff(c.Name), roff(f))
	}
	if c.Description != "" {
		b.WriteString(".SH DESCRIPTION\n")
		paragraphs(&b, c.Description)
	}
	if len(c.Flags) > 0 {
		b.WriteString(".SH OPTIONS\n")
		flags := append([]cli.Flag(nil), c.Flags...)
		sort.SliceStable(flags, func(i, j int) bool { return flags[i].Names()[0] < flags[j].Names()[0] })
		for _, f := range flags {
			b.WriteString(".TP\n.B " + flagSynopsis(f) + "\n" + roff(flagUsage(f)) + "\n")
		}
	}
	fmt.Fprintf(&b, ".SH SEE ALSO\n\\fBgprof\\fR(1)\n")
	return b.String()
}

// flagSynopsis renders "-o, --output FILE" with the placeholder urfave/cli
// takes from the backquoted word of the usage text.
func flagSynopsis(f cli.Flag) string {
	var names []string
	for _, n := range f.Names() {
		if len(n) == 1 {
			names = append(names, "\\-"+n)
		} else {
			names = append(names, "\\-\\-"+roff(n))
		}
	}
	// Long names first reads better in a man page; keep the canonical
	// name first as the CLI does.
	s := strings.Join(names, ", ")
	if df, ok := f.(cli.DocGenerationFlag); ok && df.TakesValue() {
		ph, _ := unquoteUsage(df.GetUsage())
		if ph == "" {
			ph = "VALUE"
		}
		s += " \\fI" + roff(ph) + "\\fR"
	}
	return s
}

func flagUsage(f cli.Flag) string {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return ""
	}
	_, usage := unquoteUsage(df.GetUsage())
	if df.TakesValue() {
		if v := df.GetDefaultText(); v != "" {
			usage += " (default: " + v + ")"
		} else if v := df.GetValue(); v != "" && v != "0" && v != "[]" {
			usage += " (default: " + v + ")"
		}
	}
	return usage
}

// paragraphs renders help text: blank lines separate paragraphs, and
// indented lines (examples) are kept verbatim.
func paragraphs(b *strings.Builder, text string) {
	inExample := false
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			if inExample {
				b.WriteString(".fi\n.RE\n")
				inExample = false
			}
			b.WriteString(".PP\n")
		case strings.HasPrefix(line, "   "):
			if !inExample {
				b.WriteString(".RS\n.nf\n")
				inExample = true
			}
			b.WriteString(roff(strings.TrimSpace(line)) + "\n")
		default:
			if inExample {
				b.WriteString(".fi\n.RE\n")
				inExample = false
			}
			b.WriteString(roff(line) + "\n")
		}
	}
	if inExample {
		b.WriteString(".fi\n.RE\n")
	}
}

// roff escapes text for a man page body line.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// unquoteUsage splits a flag's usage into the placeholder named in back
// quotes and the usage with the quotes removed, as the help output shows it.
func unquoteUsage(usage string) (name, text string) {
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return "", usage
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return "", usage
	}
	name = usage[i+1 : i+1+j]
	return name, usage[:i] + name + usage[i+2+j:]
}
