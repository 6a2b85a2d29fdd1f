package cmd

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// helpUsage returns the USAGE section of gprof --help, one form a line.
func helpUsage(t *testing.T) []string {
	t.Helper()
	out, errOut, code := runCLI(t, "--help")
	if code != ExitOK || errOut != "" {
		t.Fatalf("gprof --help: exit %d, stderr %q", code, errOut)
	}
	_, rest, ok := strings.Cut(out, "USAGE:\n")
	if !ok {
		t.Fatalf("no USAGE in %q", out)
	}
	section, _, _ := strings.Cut(rest, "\n\n")
	var forms []string
	for _, l := range strings.Split(section, "\n") {
		forms = append(forms, strings.TrimSpace(l))
	}
	return forms
}

// Every command that --help lists under COMMANDS has a form in its USAGE
// (issue 29: diff, symbolicate and inspect were missing), in the order of
// the command list, and no form names a command that is not there.
func TestUsageListsEveryCommand(t *testing.T) {
	forms := helpUsage(t)
	t.Logf("USAGE:\n%s", strings.Join(forms, "\n"))
	next := 0
	for _, c := range App().Commands {
		if c.Hidden {
			continue
		}
		found := false
		for next < len(forms) && strings.HasPrefix(forms[next], "gprof "+c.Name+" ") || next < len(forms) && forms[next] == "gprof "+c.Name {
			found = true
			next++
		}
		if !found {
			t.Errorf("USAGE has no form of %q where the command list has it", c.Name)
		}
	}
	if next != len(forms) {
		t.Errorf("USAGE forms of no visible command, or out of order: %q", forms[next:])
	}
	for name := range usageForms {
		if c := App().Command(name); c == nil || c.Hidden {
			t.Errorf("usageForms has %q, which is no visible command", name)
		}
	}
}

// A command added to the list gets a form without anyone writing one.
func TestUsageDerivedFromCommands(t *testing.T) {
	cmds := append(App().Commands, &cli.Command{Name: "frobnicate", ArgsUsage: "THING", Flags: []cli.Flag{&cli.BoolFlag{Name: "x"}}})
	got := usageText(cmds)
	if !strings.Contains(got, "gprof frobnicate [options] THING\n") && !strings.HasSuffix(got, "gprof frobnicate [options] THING") {
		t.Errorf("usage of a new command missing:\n%s", got)
	}
}
