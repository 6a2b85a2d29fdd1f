package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOneTestCommand: README.md's test command and CI's are the same
// script, so what passes in CI passes for a new user following the README.
func TestOneTestCommand(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile("(?m)^# 2\\..*\n\\./test\\.sh$").Match(readme) {
		t.Error("README.md's Set up step 2 is not ./test.sh")
	}
	if !regexp.MustCompile(`(?m)^\./test\.sh$`).Match(ci) {
		t.Error(".ci/run does not run ./test.sh")
	}
	for _, line := range strings.Split(string(ci), "\n") {
		// go test -c only compiles (the darwin test binaries): fine.
		runsTests := strings.Contains(line, "go test") && !strings.Contains(line, "go test -c")
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if runsTests || strings.Contains(line, "apt-get") {
			t.Errorf(".ci/run tests or installs on its own (%q): leave that to ./test.sh", line)
		}
	}
	if _, err := os.Stat("test.sh"); err != nil {
		t.Error(err)
	}
}

// TestNoTestsAtRoot: the end-to-end tests live in e2e/, with their one
// harness; the root holds the program's entry point and this house test
// alone, so that a reader of the root sees the house, not its tests.
func TestNoTestsAtRoot(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), "_test.go") && e.Name() != "house_test.go" {
			t.Errorf("%s is a test file at the root: end-to-end tests go in e2e/, unit tests beside their package", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join("e2e", "harness_test.go")); err != nil {
		t.Errorf("no end-to-end harness: %v", err)
	}
}

// TestAttachBackendsApart: each live backend is a package of its own under
// attach/ (every folder there but internal/ and backends/), so that a
// reader of one sampler sees only it. attach/ itself holds the options
// and the dispatcher, which the backends register with, so it
// imports none of them (that would be a cycle); no backend imports
// another; and outside attach/, only attach/backends links them in.
// Tests may link in another backend: perf's test Auto's fallback to
// ptrace.
func TestAttachBackendsApart(t *testing.T) {
	const mod = "github.com/gprof-dev/gprof/"
	entries, err := os.ReadDir("attach")
	if err != nil {
		t.Fatal(err)
	}
	backends := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "internal" && e.Name() != "backends" && e.Name() != "testdata" {
			backends["attach/"+e.Name()] = true
		}
	}
	for _, b := range []string{"attach/perf", "attach/ptrace", "attach/etw", "attach/suspend", "attach/mach"} {
		if !backends[b] {
			t.Errorf("no backend package %s", b)
		}
	}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if !strings.HasPrefix(p, mod) {
				continue
			}
			p = strings.TrimPrefix(p, mod)
			if p == "attach/backends" && (dir == "attach" || backends[dir] || strings.HasPrefix(dir, "attach/internal")) {
				t.Errorf("%s imports attach/backends: only the program that records does", path)
			}
			if !backends[p] || p == dir {
				continue
			}
			switch {
			case dir == "attach" || strings.HasPrefix(dir, "attach/internal/"):
				t.Errorf("%s imports the backend %s: attach and its helpers import no backend", path, p)
			case strings.HasSuffix(path, "_test.go"):
			case backends[dir]:
				t.Errorf("%s imports the backend %s: no backend imports another", path, p)
			case dir != "attach/backends":
				t.Errorf("%s imports the backend %s: import attach/backends instead", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestETWTranslatedOnce: ETW events become the neutral events (package event) in one
// place, etwevent/translate, which only the live backend (attach/etw) and the
// ETL file replayer (record/etl) import; and only the replayer, which
// registers with package format, builds profiles from them: no other
// package that imports an ETW package imports the recorder or the model.
// format itself imports none (it reads ETL files through the
// registration), as for perf.data.
func TestETWTranslatedOnce(t *testing.T) {
	const mod = "github.com/gprof-dev/gprof/"
	imports := map[string]map[string]bool{} // non-test imports by package dir
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if imports[dir] == nil {
			imports[dir] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); strings.HasPrefix(p, mod) {
				imports[dir][strings.TrimPrefix(p, mod)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"attach/etw", "record/etl"} {
		if !imports[want]["etwevent/translate"] {
			t.Errorf("%s does not import etwevent/translate", want)
		}
	}
	for dir, imp := range imports {
		etw := imp["etwevent"] || imp["etwevent/translate"]
		switch {
		case imp["etwevent/translate"] && dir != "attach/etw" && dir != "record/etl":
			t.Errorf("%s imports etwevent/translate: only the live ETW backend and the ETL replayer translate ETW events", dir)
		case etw && (imp["record"] || imp["profile"]) && dir != "record/etl":
			t.Errorf("%s builds profiles from ETW events: only record/etl does, through record.Replay", dir)
		case (dir == "format" || strings.HasPrefix(dir, "format/")) && (etw || imp["record/etl"]):
			t.Errorf("%s imports an ETW package: format reads ETL files through record/etl's registration", dir)
		}
	}
}
