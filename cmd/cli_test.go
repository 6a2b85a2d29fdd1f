package cmd

import (
	"bytes"
	"strings"
	"testing"
)

// runCLI runs gprof in process as Main does, with its output captured.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	app := App()
	app.Writer = &out
	app.ErrWriter = &errb
	err := app.Run(interspersed(app, append([]string{"gprof"}, args...)))
	code = printError(&errb, err)
	return out.String(), errb.String(), code
}

func TestHelpCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // a line of the help text that must appear
	}{
		{[]string{"help"}, "gprof record [options] -- COMMAND"},
		{[]string{"help", "record"}, "--stack-size"},
		{[]string{"help", "report"}, "--top"},
		{[]string{"--help"}, "gprof record [options] -- COMMAND"},
		{[]string{"record", "--help"}, "--stack-size"},
	} {
		out, errOut, code := runCLI(t, tc.args...)
		if code != ExitOK || !strings.Contains(out, tc.want) || errOut != "" {
			t.Errorf("gprof %s: exit %d, stderr %q, stdout has %q: %v", strings.Join(tc.args, " "), code, errOut, tc.want, strings.Contains(out, tc.want))
		}
	}
	_, errOut, code := runCLI(t, "help", "nosuch")
	if code != ExitUsage || !strings.Contains(errOut, "unknown command 'nosuch'") {
		t.Errorf("gprof help nosuch: exit %d, stderr %q", code, errOut)
	}
}
