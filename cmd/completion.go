package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// Shell completions are generated from App, like the man pages: commands,
// their flags, and what each flag's value is (a file, a directory, a
// process, one of a few words). The scripts are committed under
// completions/, and a test fails when they drift.

// completionShells are the shells 'gprof completion' writes for, with the
// file name each one's completion directory expects.
var completionShells = map[string]string{
	"bash": "gprof.bash",
	"zsh":  "_gprof",
	"fish": "gprof.fish",
}

// flagChoices are the values of flags that take one of a few words, by
// "command.flag", or by flag name for every command. The words are also in
// each flag's usage text; a test checks that they agree.
var flagChoices = map[string][]string{
	"format":        {"gecko", "processed"},
	"report.format": {"text", "json", "collapsed"},
	"convert.to":    {"processed", "gecko", "pprof", "otlp"},
	"record.event": {"cpu-clock", "task-clock", "page-faults", "minor-faults", "major-faults", "context-switches",
		"cpu-migrations", "alignment-faults", "emulation-faults", "cycles", "instructions", "cache-misses", "branch-misses"},
	"call-graph": {"fp", "dwarf"},
	"backend":    {"perf", "ptrace", "mach", "etw", "suspend"},
}

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: `Prints the completion script of a shell for gprof's commands, flags and
their values. The same scripts are in the completions/ directory of the
sources.

Examples:
   # bash, for this shell
   source <(./bin/gprof completion bash)

   # for good: see README.md, "Shell completion" (the scripts complete
   # the command gprof, so put ./bin/gprof on your PATH under that name)
   ./bin/gprof completion fish > ~/.config/fish/completions/gprof.fish`,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("give a shell: gprof completion bash, zsh or fish")
			}
			script, err := Completion(c.Args().First())
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.App.Writer, script)
			return err
		},
	}
}

// genCompletionsCommand writes every shell's script into a directory. It
// is hidden, like gen-man.
func genCompletionsCommand() *cli.Command {
	return &cli.Command{
		Name:      "gen-completions",
		Usage:     "write shell completion scripts to DIR",
		ArgsUsage: "DIR",
		Hidden:    true,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("gen-completions needs one directory")
			}
			return WriteCompletions(c.Args().First())
		},
	}
}

// WriteCompletions writes the completion script of every shell into dir.
func WriteCompletions(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for shell, name := range completionShells {
		script, err := Completion(shell)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Completion returns the completion script for shell.
func Completion(shell string) (string, error) {
	cs := completionModel(App())
	switch shell {
	case "bash":
		return bashCompletion(cs), nil
	case "zsh":
		return zshCompletion(cs), nil
	case "fish":
		return fishCompletion(cs), nil
	}
	return "", usagef("unknown shell %q: use bash, zsh or fish", shell)
}

// What a flag's value or a command's arguments complete to.
const (
	complNone     = ""         // a boolean flag, or nothing to offer
	complWord     = "word"     // a value with nothing to offer (a number...)
	complFile     = "file"     // file names
	complDir      = "dir"      // directory names
	complPid      = "pid"      // process IDs
	complBackend  = "backend"  // the recording backends of the machine's OS
	complChoice   = "choice"   // one of choices
	complCommand  = "command"  // a command line to run (record, after --)
	complCommands = "commands" // gprof's own commands (help)
)

type complFlag struct {
	long, short []string // names without dashes
	repeat      bool     // may be given more than once
	value       string
	choices     []string
	help        string
}

type complCmd struct {
	name, help string
	flags      []complFlag
	args       string
	choices    []string // of args, when complChoice
}

// completionModel reads what the scripts need from app: its visible
// commands (and help), their flags with --help, and their arguments.
func completionModel(app *cli.App) []complCmd {
	var out []complCmd
	for _, c := range app.Commands {
		if c.Hidden && c.Name != "help" {
			continue
		}
		cc := complCmd{name: c.Name, help: shortHelp(c.Usage)}
		switch {
		case c.Name == "record":
			cc.args = complCommand
		case c.Name == "help":
			cc.args = complCommands
		case c.Name == "completion":
			cc.args, cc.choices = complChoice, []string{"bash", "fish", "zsh"}
		case strings.Contains(c.ArgsUsage, "PROFILE"):
			cc.args = complFile
		}
		flags := c.Flags
		if !c.HideHelp {
			flags = append(slices.Clone(flags), cli.HelpFlag)
		}
		for _, f := range flags {
			cc.flags = append(cc.flags, completionFlag(c.Name, f))
		}
		out = append(out, cc)
	}
	return out
}

func completionFlag(command string, f cli.Flag) complFlag {
	var cf complFlag
	for _, n := range f.Names() {
		if len(n) == 1 {
			cf.short = append(cf.short, n)
		} else {
			cf.long = append(cf.long, n)
		}
	}
	_, cf.repeat = f.(*cli.StringSliceFlag)
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return cf
	}
	placeholder, usage := unquoteUsage(df.GetUsage())
	cf.help = shortHelp(usage)
	if !df.TakesValue() {
		return cf
	}
	cf.value = complWord
	switch placeholder {
	case "FILE":
		cf.value = complFile
	case "DIR":
		cf.value = complDir
	case "PID":
		cf.value = complPid
	}
	if ch, ok := flagChoices[command+"."+f.Names()[0]]; ok {
		cf.value, cf.choices = complChoice, ch
	} else if ch, ok := flagChoices[f.Names()[0]]; ok {
		cf.value, cf.choices = complChoice, ch
	}
	if f.Names()[0] == "backend" {
		// The scripts offer the backends of the OS they run on.
		cf.value = complBackend
	}
	return cf
}

// shortHelp is the first clause of a usage text, as completion menus show
// one short line.
func shortHelp(s string) string {
	for _, sep := range []string{"; ", " (", ": "} {
		if i := strings.Index(s, sep); i > 0 {
			s = s[:i]
		}
	}
	return s
}

// names returns a flag's spellings with dashes: --long... -s...
func (f complFlag) names() []string {
	var out []string
	for _, n := range f.long {
		out = append(out, "--"+n)
	}
	for _, n := range f.short {
		out = append(out, "-"+n)
	}
	return out
}

func commandNames(cs []complCmd) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.name)
	}
	return out
}

// userPids lists the processes gprof can record, one ID a line: not
// kernel threads (kthreadd, pid 2, and its children), which have no user
// space to sample and which gprof refuses.
const userPids = `ps -e -o pid=,ppid= 2>/dev/null | awk '$1 != 2 && $2 != 2 { print $1 }'`

// osBackends lists the recording backends of the OS the script runs on.
const osBackends = `case $(uname -s) in Linux) echo perf ptrace ;; Darwin) echo mach ;; *) echo etw suspend ;; esac`

const generatedNote = "Generated from gprof's command-line definitions by 'gprof completion %s'; do not edit."

func bashCompletion(cs []complCmd) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for gprof.\n# "+generatedNote+"\n", "bash")
	b.WriteString(`
__gprof_words() { mapfile -t COMPREPLY < <(compgen -W "$1" -- "$cur"); }
__gprof_files() { compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$cur"); }
__gprof_dirs() { compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$cur"); }
__gprof_pids() { __gprof_words "$(` + userPids + `)"; }
__gprof_backends() { __gprof_words "$(` + osBackends + `)"; }

_gprof() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local cmd="" i j
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        -*) ;;
        *) cmd=${COMP_WORDS[i]}; break ;;
        esac
    done
    case $cmd in
    "")
        __gprof_words "` + strings.Join(append(commandNames(cs), "--help", "-h", "--version", "-v"), " ") + `"
        ;;
`)
	for _, c := range cs {
		fmt.Fprintf(&b, "    %s)\n", c.name)
		if c.args == complCommand {
			b.WriteString(`        for ((j = i + 1; j < COMP_CWORD; j++)); do
            if [[ ${COMP_WORDS[j]} == -- ]]; then
                if declare -F _command_offset >/dev/null; then
                    _command_offset $((j + 1))
                else
                    mapfile -t COMPREPLY < <(compgen -c -- "$cur")
                fi
                return
            fi
        done
`)
		}
		var cases, words []string
		for _, f := range c.flags {
			if f.value == complWord {
				words = append(words, f.names()...)
			}
		}
		if len(words) > 0 {
			// Values with nothing to offer: numbers, durations, sizes.
			cases = append(cases, fmt.Sprintf("        %s) return ;;\n", strings.Join(words, "|")))
		}
		for _, f := range c.flags {
			if f.value == complNone || f.value == complWord {
				continue
			}
			var action string
			switch f.value {
			case complFile:
				action = "__gprof_files; return"
			case complDir:
				action = "__gprof_dirs; return"
			case complPid:
				action = "__gprof_pids; return"
			case complBackend:
				action = "__gprof_backends; return"
			case complChoice:
				action = `__gprof_words "` + strings.Join(f.choices, " ") + `"; return`
			}
			cases = append(cases, fmt.Sprintf("        %s) %s ;;\n", strings.Join(f.names(), "|"), action))
		}
		if len(cases) > 0 {
			b.WriteString("        case $prev in\n")
			for _, s := range cases {
				b.WriteString("    " + s)
			}
			b.WriteString("        esac\n")
		}
		var flags []string
		for _, f := range c.flags {
			flags = append(flags, f.names()...)
		}
		if c.args == complCommand {
			flags = append(flags, "--")
		}
		offer := `__gprof_words "` + strings.Join(flags, " ") + `"`
		switch c.args {
		case complFile:
			fmt.Fprintf(&b, "        if [[ $cur == -* ]]; then %s; else __gprof_files; fi\n", offer)
		case complCommands:
			fmt.Fprintf(&b, "        if [[ $cur == -* ]]; then %s; else __gprof_words \"%s\"; fi\n", offer, strings.Join(commandNames(cs), " "))
		case complChoice:
			fmt.Fprintf(&b, "        if [[ $cur == -* ]]; then %s; else __gprof_words \"%s\"; fi\n", offer, strings.Join(c.choices, " "))
		default:
			fmt.Fprintf(&b, "        %s\n", offer)
		}
		b.WriteString("        ;;\n")
	}
	b.WriteString("    esac\n}\n\ncomplete -F _gprof gprof\n")
	return b.String()
}

// zshQuote quotes s for a single-quoted zsh word inside an _arguments
// description in brackets.
func zshQuote(s string) string {
	s = strings.NewReplacer(`[`, `\[`, `]`, `\]`, `:`, `\:`).Replace(s)
	return strings.ReplaceAll(s, "'", `'\''`)
}

func zshCompletion(cs []complCmd) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#compdef gprof\n# zsh completion for gprof.\n# "+generatedNote+"\n\n", "zsh")
	b.WriteString("__gprof_pids() {\n    local -a pids\n    pids=(${(f)\"$(" + userPids + ")\"})\n    compadd -a pids\n}\n\n")
	b.WriteString("__gprof_backends() {\n    local -a backends\n    backends=(${=$(" + osBackends + ")})\n    compadd -a backends\n}\n\n")
	b.WriteString("_gprof() {\n    local curcontext=$curcontext state line ret=1\n    local -a commands\n    commands=(\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "        '%s:%s'\n", c.name, strings.ReplaceAll(strings.ReplaceAll(c.help, "'", `'\''`), ":", `\:`))
	}
	b.WriteString(`    )
    _arguments -C \
        '(- *)'{-h,--help}'[show help]' \
        '(- *)'{-v,--version}'[print the version]' \
        '1: :->command' \
        '*:: :->args' && ret=0
    case $state in
    command)
        _describe -t commands 'gprof command' commands && ret=0
        ;;
    args)
        curcontext=${curcontext%:*:*}:gprof-$words[1]:
        case $words[1] in
`)
	for _, c := range cs {
		fmt.Fprintf(&b, "        %s)\n            _arguments -S", c.name)
		for _, f := range c.flags {
			names := f.names()
			var spec string
			switch {
			case f.repeat && len(names) > 1:
				spec = "'*'{" + strings.Join(names, ",") + "}'"
			case f.repeat:
				spec = "'*" + names[0]
			case len(names) > 1:
				// Either spelling, once: each excludes the others.
				spec = "'(" + strings.Join(names, " ") + ")'{" + strings.Join(names, ",") + "}'"
			default:
				spec = "'" + names[0]
			}
			spec += "[" + zshQuote(f.help) + "]"
			switch f.value {
			case complWord:
				spec += ":value: "
			case complFile:
				spec += ":file:_files"
			case complDir:
				spec += ":directory:_files -/"
			case complPid:
				spec += ":process ID:__gprof_pids"
			case complBackend:
				spec += ":backend:__gprof_backends"
			case complChoice:
				spec += ":value:(" + strings.Join(f.choices, " ") + ")"
			}
			spec += "'"
			b.WriteString(" \\\n                " + spec)
		}
		switch c.args {
		case complCommand:
			b.WriteString(" \\\n                '1:command:_command_names -e' \\\n                '*::arguments:_normal'")
		case complFile:
			b.WriteString(" \\\n                '1:profile:_files'")
		case complCommands:
			b.WriteString(" \\\n                '1:command:(" + strings.Join(commandNames(cs), " ") + ")'")
		case complChoice:
			b.WriteString(" \\\n                '1:shell:(" + strings.Join(c.choices, " ") + ")'")
		}
		b.WriteString(" && ret=0\n            ;;\n")
	}
	b.WriteString("        esac\n        ;;\n    esac\n    return ret\n}\n\n_gprof \"$@\"\n")
	return b.String()
}

// fishQuote quotes s as a single-quoted fish string.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func fishCompletion(cs []complCmd) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# fish completion for gprof.\n# "+generatedNote+"\n", "fish")
	b.WriteString(`
# __gprof_pids prints the processes gprof can record: not kernel threads.
function __gprof_pids
    ` + userPids + `
end

# __gprof_backends prints the recording backends of this OS.
function __gprof_backends
    switch (uname -s)
        case Linux
            echo perf\nptrace
        case Darwin
            echo mach
        case '*'
            echo etw\nsuspend
    end
end

# __gprof_command prints the gprof command on the line, if any.
function __gprof_command
    for w in (commandline -opc)[2..-1]
        switch $w
            case '-*'
            case '*'
                echo $w
                return 0
        end
    end
    return 1
end

# __gprof_using succeeds when the command on the line is $argv[1] and, for
# record, the line has not reached the profiled command after --.
function __gprof_using
    set -l cmd (__gprof_command)
    test "$cmd" = $argv[1]; or return 1
    not contains -- -- (commandline -opc)
end

# __gprof_after_dashdash succeeds after record's --, where a command to
# profile is typed.
function __gprof_after_dashdash
    set -l cmd (__gprof_command)
    test "$cmd" = record; and contains -- -- (commandline -opc)
end

complete -c gprof -f
complete -c gprof -n 'not __gprof_command' -s h -l help -d 'show help'
complete -c gprof -n 'not __gprof_command' -s v -l version -d 'print the version'
`)
	for _, c := range cs {
		fmt.Fprintf(&b, "complete -c gprof -n 'not __gprof_command' -a %s -d %s\n", c.name, fishQuote(c.help))
	}
	for _, c := range cs {
		b.WriteString("\n")
		cond := fishQuote("__gprof_using " + c.name)
		for _, f := range c.flags {
			line := "complete -c gprof -n " + cond
			for _, s := range f.short {
				line += " -s " + s
			}
			for _, l := range f.long {
				line += " -l " + l
			}
			switch f.value {
			case complWord:
				line += " -x"
			case complFile:
				line += " -r -F"
			case complDir:
				line += " -x -a '(__fish_complete_directories)'"
			case complPid:
				line += " -x -a '(__gprof_pids)'"
			case complBackend:
				line += " -x -a '(__gprof_backends)'"
			case complChoice:
				line += " -x -a " + fishQuote(strings.Join(f.choices, " "))
			}
			b.WriteString(line + " -d " + fishQuote(f.help) + "\n")
		}
		switch c.args {
		case complFile:
			fmt.Fprintf(&b, "complete -c gprof -n %s -F\n", cond)
		case complCommands:
			fmt.Fprintf(&b, "complete -c gprof -n %s -a %s\n", cond, fishQuote(strings.Join(commandNames(cs), " ")))
		case complChoice:
			fmt.Fprintf(&b, "complete -c gprof -n %s -a %s\n", cond, fishQuote(strings.Join(c.choices, " ")))
		case complCommand:
			fmt.Fprintf(&b, "complete -c gprof -n %s -a --\n", cond)
			b.WriteString("complete -c gprof -n __gprof_after_dashdash -x -a '(__fish_complete_subcommand --fcs-skip=(contains -i -- -- (commandline -opc)))'\n")
		}
	}
	return b.String()
}
