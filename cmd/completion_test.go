package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestCompletionsUpToDate fails when the committed completion scripts
// drift from the CLI definitions they are generated from.
func TestCompletionsUpToDate(t *testing.T) {
	for shell, name := range completionShells {
		want, err := Completion(shell)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("..", "completions", name))
		if err != nil || string(got) != want {
			t.Errorf("completions/%s is missing or out of date: run 'go run . gen-completions completions'", name)
		}
	}
}

// TestCompletionModel checks what the scripts are generated from: every
// visible command and flag is there, choices agree with the usage text
// that documents them, and values named FILE complete to files.
func TestCompletionModel(t *testing.T) {
	model := completionModel(App())
	byName := map[string]complCmd{}
	for _, c := range model {
		byName[c.name] = c
	}
	for _, c := range App().Commands {
		cc, ok := byName[c.Name]
		if c.Hidden {
			if ok && c.Name != "help" {
				t.Errorf("hidden command %s is completed", c.Name)
			}
			continue
		}
		if !ok {
			t.Errorf("command %s is not completed", c.Name)
			continue
		}
		for _, f := range c.Flags {
			i := slices.IndexFunc(cc.flags, func(cf complFlag) bool { return slices.Contains(cf.names(), "--"+f.Names()[0]) })
			if i < 0 {
				t.Errorf("%s --%s is not completed", c.Name, f.Names()[0])
				continue
			}
			cf := cc.flags[i]
			usage := f.(interface{ GetUsage() string }).GetUsage()
			for _, ch := range cf.choices {
				if !strings.Contains(usage, ch) {
					t.Errorf("%s --%s completes %q, which its usage %q does not mention", c.Name, f.Names()[0], ch, usage)
				}
			}
			if strings.Contains(usage, "`FILE`") && cf.value != complFile {
				t.Errorf("%s --%s takes a FILE but completes %q", c.Name, f.Names()[0], cf.value)
			}
		}
	}
	if !slices.Contains(byName["record"].flags[0].names(), "-p") || byName["record"].flags[0].value != complPid {
		t.Errorf("record -p does not complete process IDs: %+v", byName["record"].flags[0])
	}
}

// TestBashCompletion runs the bash script as bash would on a few command
// lines.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	script, _ := Completion("bash")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "prof.json.gz"), nil, 0o644)
	os.Mkdir(filepath.Join(dir, "debug"), 0o755)
	complete := func(line string) []string {
		t.Helper()
		words := strings.Split(line, " ")
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		prog := script + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" + strconv.Itoa(len(words)-1) +
			"\n_gprof\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		out, err := exec.Command(bash, "--norc", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		return strings.Fields(string(out))
	}
	for _, tc := range []struct {
		line string
		want []string // all of these, and for exact lists nothing else
		only bool
	}{
		{"gprof re", []string{"record", "report"}, true},
		{"gprof ", []string{"record", "convert", "symbolicate", "report", "completion", "help", "--help", "--version"}, false},
		{"gprof record --for", []string{"--format"}, true},
		{"gprof record --format ", []string{"gecko", "processed"}, true},
		{"gprof record -e c", []string{"cpu-clock", "context-switches", "cpu-migrations", "cycles", "cache-misses"}, true},
		{"gprof record -d ", nil, true},
		{"gprof record -o " + dir + "/pr", []string{dir + "/prof.json.gz"}, true},
		{"gprof record --symbol-dir " + dir + "/", []string{dir + "/debug"}, true},
		{"gprof record -q -- ba", []string{"bash"}, false},
		{"gprof record -q -- bash --nor", nil, false}, // the command's own arguments: not gprof's flags
		{"gprof report " + dir + "/p", []string{dir + "/prof.json.gz"}, true},
		{"gprof report --js", []string{"--json-output", "--json"}, true},
		{"gprof report --json-output " + dir + "/pr", []string{dir + "/prof.json.gz"}, true},
		{"gprof convert -o " + dir + "/d", []string{dir + "/debug"}, true},
		{"gprof completion ", []string{"bash", "fish", "zsh"}, true},
		{"gprof help rec", []string{"record"}, true},
	} {
		got := complete(tc.line)
		ok := true
		for _, w := range tc.want {
			ok = ok && slices.Contains(got, w)
		}
		if tc.only && len(got) != len(tc.want) {
			ok = false
		}
		if slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "--") }) && strings.Contains(tc.line, " -- ") {
			ok = false
		}
		if !ok {
			t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
		}
	}
}

// TestFishCompletion asks fish itself what the script completes.
func TestFishCompletion(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("fish is not installed")
	}
	script, _ := Completion("fish")
	dir := t.TempDir()
	path := filepath.Join(dir, "gprof.fish")
	os.WriteFile(path, []byte(script), 0o644)
	os.WriteFile(filepath.Join(dir, "prof.json.gz"), nil, 0o644)
	for line, want := range map[string][]string{
		"gprof re":                        {"record", "report"},
		"gprof record --for":              {"--format"},
		"gprof record --format ":          {"gecko", "processed"},
		"gprof record -o " + dir + "/pr":  {dir + "/prof.json.gz"},
		"gprof report " + dir + "/pr":     {dir + "/prof.json.gz"},
		"gprof report --js":               {"--json", "--json-output"},
		"gprof completion ":               {"bash", "fish", "zsh"},
		"gprof record -- bash --nonsense": {},
	} {
		out, err := exec.Command(fish, "--no-config", "-c", "source $argv[1]; complete -C $argv[2]", path, line).CombinedOutput()
		if err != nil {
			t.Fatalf("fish: %v\n%s", err, out)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if w, _, _ := strings.Cut(l, "\t"); w != "" {
				got = append(got, w)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%q completes to %q, want %q", line, got, want)
		}
	}
}

// TestZshCompletionParses: zsh reads the script (its behaviour was checked
// by hand with zpty; scripting zsh's completion system is not practical).
func TestZshCompletionParses(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh is not installed")
	}
	if out, err := exec.Command(zsh, "-n", filepath.Join("..", "completions", "_gprof")).CombinedOutput(); err != nil {
		t.Errorf("zsh -n: %v\n%s", err, out)
	}
}
