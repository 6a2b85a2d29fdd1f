package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 18's "small things a newcomer hit", each as it was hit.

// An unknown long flag is named as typed, with two dashes.
func TestUnknownFlagNamedAsTyped(t *testing.T) {
	_, errOut, code := runCLI(t, "report", "--bogus", "x.json")
	if code != ExitUsage || !strings.Contains(errOut, "unknown flag --bogus") || strings.Contains(errOut, " -bogus") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	_, errOut, _ = runCLI(t, "report", "--top")
	if !strings.Contains(errOut, "--top") || strings.Contains(errOut, " -top") {
		t.Errorf("stderr %q", errOut)
	}
}

// A rate out of range is echoed as typed, not in exponent notation.
func TestRateEchoedAsTyped(t *testing.T) {
	_, errOut, code := runCLI(t, "record", "-r", "1000000", "-o", filepath.Join(t.TempDir(), "x.json"), "--", "true")
	if code != ExitUsage || !strings.Contains(errOut, "--rate 1000000 is out of range") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// gprof view of a directory says it is one, once.
func TestViewDirectory(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := runCLI(t, "view", "--no-open", dir)
	if code == ExitOK || strings.Contains(errOut, "read read") || !strings.Contains(errOut, dir+" is a directory") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// The help text shows Ctrl-\ as one backslash.
func TestHelpCtrlBackslash(t *testing.T) {
	out, _, _ := runCLI(t, "record", "--help")
	if !strings.Contains(out, `Ctrl-\)`) || strings.Contains(out, `Ctrl-\\`) {
		t.Errorf("record --help shows Ctrl-\\ as %q", out[strings.Index(out, "SIGQUIT"):][:30])
	}
}

// A signal's exit status is named.
func TestSignalStatusNamed(t *testing.T) {
	var b strings.Builder
	code := 139
	printRecordSummary(&b, recordSummary{Output: "p.json", ExitCode: &code})
	if !strings.Contains(b.String(), "killed by SIGSEGV") {
		t.Errorf("summary %q", b.String())
	}
	code = 3
	b.Reset()
	printRecordSummary(&b, recordSummary{Output: "p.json", ExitCode: &code})
	if !strings.Contains(b.String(), "exited with status 3") {
		t.Errorf("summary %q", b.String())
	}
}

// Completion offers the backends of this OS and no kernel threads.
func TestCompletionBackendsAndPids(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		s, err := Completion(sh)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s, "perf ptrace mach etw suspend") || !strings.Contains(s, "uname -s") {
			t.Errorf("%s: backends are not chosen by OS", sh)
		}
		if !strings.Contains(s, "$2 != 2") || strings.Contains(s, "__fish_complete_pids") || strings.Contains(s, ":_pids") {
			t.Errorf("%s: process IDs include kernel threads", sh)
		}
	}
}

// --fail-if rules: one that matches nothing says so and fails; cpu>N
// says the form meant.
func TestFailIfRules(t *testing.T) {
	_, errOut, code := runCLI(t, "diff", "--fail-if", "cpu>20", "a", "b")
	if code != ExitUsage || !strings.Contains(errOut, "cpu>+20%") {
		t.Errorf("cpu>20: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runCLI(t, "diff", "--fail-if", "self:foo>3pp", "a", "b")
	if code != ExitUsage || !strings.Contains(errOut, "self:foo>+3pp") {
		t.Errorf("self:foo>3pp: exit %d, stderr %q", code, errOut)
	}
	p := writeTestProfile(t)
	_, errOut, code = runCLI(t, "diff", "--fail-if", "self:nosuchfunc>+1pp", p, p)
	if code != ExitUsage || !strings.Contains(errOut, "matches no function in either profile") {
		t.Errorf("unmatched rule: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code = runCLI(t, "diff", "--fail-if", "self:*>+1pp", p, p); code != ExitOK {
		t.Errorf("a rule that matches: exit %d, stderr %q", code, errOut)
	}
}

// writeTestProfile returns a small real profile the tests carry (a
// Firefox Gecko profile).
func writeTestProfile(t *testing.T) string {
	t.Helper()
	p := filepath.Join("..", "format", "gecko", "testdata", "firefox-v25.json")
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// Every command that reads profiles says, in one line, what it expected
// and what it found (issue 29: a text file was "invalid character 'g'
// looking for beginning of value at byte 0").
func TestNotAProfileSaysWhatItFound(t *testing.T) {
	dir := t.TempDir()
	txt := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(txt, []byte(strings.Repeat("garbage line\n", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.json.gz")
	want := "cannot read profile " + txt + `: expected a profile (Gecko or processed JSON, pprof, ETL or perf.data), found a text file starting "garbage line"`
	for _, args := range [][]string{
		{"report", txt},
		{"report", "--tree", txt},
		{"diff", txt, txt},
		{"view", "--no-open", txt},
		{"convert", txt, "-o", out},
		{"symbolicate", txt, "-o", out},
		{"push", "--endpoint", "http://127.0.0.1:9", txt},
	} {
		_, errOut, code := runCLI(t, args...)
		if code != ExitError || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) {
			t.Errorf("gprof %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("an output was written")
	}
}

// inspect reads binaries, not profiles: a file of another kind gets the
// same kind of line, what inspect expected and what it found.
func TestInspectSaysWhatItFound(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, body, found string }{
		{"big.txt", strings.Repeat("garbage line\n", 1000), `a text file starting "garbage line"`},
		{"empty", "", "an empty file"},
		{"pic.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "a PNG image"},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		want := path + ": expected a program, shared library or object file (ELF, Mach-O or PE) or a PDB, found " + c.found
		_, errOut, code := runCLI(t, "inspect", path)
		if code != ExitError || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) {
			t.Errorf("gprof inspect %s: exit %d, stderr %q, want %q", c.name, code, errOut, want)
		}
	}
}
