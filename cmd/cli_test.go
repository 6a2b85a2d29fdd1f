package cmd

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// runCLI runs gprof in process as Main does, with its output captured.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	// Commands that print results write to os.Stdout itself.
	f, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := os.Stdout
	os.Stdout = f
	defer func() { os.Stdout = saved }()
	app := App()
	app.Writer = &out
	app.ErrWriter = &errb
	err = app.Run(interspersed(app, append([]string{"gprof"}, args...)))
	code = printError(&errb, err)
	direct, _ := os.ReadFile(f.Name())
	return out.String() + string(direct), errb.String(), code
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

// TestRecordRejectsBadNumbers checks values that parse as numbers but mean
// nothing. The output directory does not exist, so a value that passes
// validation fails there (exit 1) and nothing is ever recorded.
func TestRecordRejectsBadNumbers(t *testing.T) {
	for _, args := range [][]string{
		{"-d", "NaN"}, {"-d", "inf"}, {"-d", "+Inf"}, {"-d", "-inf"}, {"-d", "1e300"}, {"-d", "1e-12"}, {"-d", "0"},
		{"--keep", "NaN"}, {"--keep", "inf"}, {"--keep", "1e300"}, {"--keep", "1e-12"},
		{"-r", "NaN"}, {"-r", "inf"}, {"-F", "nan"}, {"-r", "0"},
		{"--max-memory", "NaN"}, {"--max-memory", "inf"}, {"--max-memory", "1e30G"},
		{"--stack-size", "NaN"}, {"--stack-size", "100K"}, {"--stack-size", "65529"}, {"--stack-size", "1"},
	} {
		full := append(append([]string{"record"}, args...), "-o", "/nonexistent-gprof-dir/p.json", "--", "true")
		_, errOut, code := runCLI(t, full...)
		flag := map[string]string{"-d": "--duration", "-r": "--rate", "-F": "--rate"}[args[0]]
		if flag == "" {
			flag = args[0]
		}
		if code != ExitUsage || !strings.Contains(errOut, flag) {
			t.Errorf("gprof record %s: exit %d, stderr %q; want exit 2 naming the flag", strings.Join(args, " "), code, errOut)
		}
	}
}

// TestRecordAcceptsSizes checks that every byte-valued flag takes the same
// K/M suffixes, and that ordinary values pass validation (reaching the
// output check, exit 1).
func TestRecordAcceptsSizes(t *testing.T) {
	for _, args := range [][]string{
		{"--stack-size", "8k"}, {"--stack-size", "8K"}, {"--stack-size", "8KiB"}, {"--stack-size", "4096"}, {"--stack-size", "65528"},
		{"--max-memory", "256M"}, {"-d", "2.5"}, {"-d", "1m30s"}, {"--keep", "5m"}, {"-r", "4000"},
	} {
		full := append(append([]string{"record"}, args...), "-o", "/nonexistent-gprof-dir/p.json", "--", "true")
		_, errOut, code := runCLI(t, full...)
		if code != ExitError || !strings.Contains(errOut, "does not exist") {
			t.Errorf("gprof record %s: exit %d, stderr %q; want it accepted", strings.Join(args, " "), code, errOut)
		}
	}
}

func TestParseSize(t *testing.T) {
	for s, want := range map[string]int64{"8k": 8 << 10, "8K": 8 << 10, "8KiB": 8 << 10, "8kb": 8 << 10, "256M": 256 << 20, "1G": 1 << 30, "4096": 4096, "1.5K": 1536} {
		if got, err := parseSize(s); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "K", "NaN", "inf", "-1", "0", "1e30G", "12X"} {
		if got, err := parseSize(s); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", s, got)
		}
	}
}
