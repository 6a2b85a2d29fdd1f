package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
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
	for _, f := range goFiles(t) {
		for _, p := range f.imports {
			if p == "attach/backends" && (f.dir == "attach" || backends[f.dir] || strings.HasPrefix(f.dir, "attach/internal")) {
				t.Errorf("%s imports attach/backends: only the program that records does", f.path)
			}
			if !backends[p] || p == f.dir {
				continue
			}
			switch {
			case f.dir == "attach" || strings.HasPrefix(f.dir, "attach/internal/"):
				t.Errorf("%s imports the backend %s: attach and its helpers import no backend", f.path, p)
			case f.test:
			case backends[f.dir]:
				t.Errorf("%s imports the backend %s: no backend imports another", f.path, p)
			case f.dir != "attach/backends":
				t.Errorf("%s imports the backend %s: import attach/backends instead", f.path, p)
			}
		}
	}
}

// TestETWTranslatedOnce: ETW events become the neutral events (package
// event) in one place, etwevent/translate, which only the live backend
// (attach/etw) and the ETL file replayer (record/etl) import; and only the
// replayer, which registers with package format, builds profiles from
// them: no other package that imports an ETW package imports the recorder
// or the model. format itself imports none (it reads ETL files through
// the registration), as for perf.data.
func TestETWTranslatedOnce(t *testing.T) {
	imports := packageImports(t)
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

// TestHouseOneWay: data flows one way, events → builder → identify →
// symbolize → format (docs/architecture.md), and the imports say so. The
// rooms of the house (the top-level folders) import each other without a
// circle; the lowest packages import only what is below them: the model
// (profile) and the object file reader nothing of gprof's, the neutral
// events nothing but objfile (for a binary's one identity type), perf's
// record decoder nothing but the events; the OS layer (attach) knows
// nothing of what is made of its events; symbolize, unwind and the
// interpreter readers nothing of the recorder; and what works on the
// model (format, analysis, view, push) nothing of how it was recorded.
func TestHouseOneWay(t *testing.T) {
	imports := packageImports(t)
	only := map[string][]string{
		"profile":    {},
		"objfile":    {},
		"pdb":        {},
		"event":      {"objfile"},
		"perfrecord": {"event"},
		"etwevent":   {"event", "objfile"},
	}
	for dir, allowed := range only {
		if imports[dir] == nil {
			t.Errorf("no package %s", dir)
		}
		for p := range imports[dir] {
			if !slices.Contains(allowed, p) {
				t.Errorf("%s imports %s: it may import only %v of gprof's packages", dir, p, allowed)
			}
		}
	}
	never := []struct{ from, to []string }{
		{[]string{"attach"}, []string{"record", "symbolize", "format", "analysis", "view", "push", "cmd", "profile"}},
		{[]string{"symbolize", "unwind", "python", "objfile"}, []string{"record", "attach", "format", "analysis", "view", "push", "cmd"}},
		{[]string{"format", "analysis", "view", "push"}, []string{"record", "attach", "event", "cmd"}},
	}
	for dir, imp := range imports {
		for _, rule := range never {
			if !underAny(dir, rule.from) {
				continue
			}
			for p := range imp {
				if underAny(p, rule.to) {
					t.Errorf("%s imports %s: the data flows the other way (docs/architecture.md)", dir, p)
				}
			}
		}
	}

	// Rooms: a circle between top-level folders is an import that runs
	// back up, however many packages it passes through.
	rooms := map[string]map[string]bool{}
	for dir, imp := range imports {
		from := room(dir)
		if from == "bench" || from == "e2e" {
			continue
		}
		if rooms[from] == nil {
			rooms[from] = map[string]bool{}
		}
		for p := range imp {
			if to := room(p); to != from {
				rooms[from][to] = true
			}
		}
	}
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var visit func(r string, path []string)
	visit = func(r string, path []string) {
		switch state[r] {
		case open:
			t.Errorf("the rooms import each other in a circle: %s", strings.Join(append(path, r), " → "))
			return
		case done:
			return
		}
		state[r] = open
		for _, to := range slices.Sorted(maps.Keys(rooms[r])) {
			visit(to, append(path, r))
		}
		state[r] = done
	}
	for _, r := range slices.Sorted(maps.Keys(rooms)) {
		visit(r, nil)
	}
}

// TestPackageNamesApart: no two of gprof's packages share a name, so no
// file needs an import alias to tell them apart, and none uses one.
func TestPackageNamesApart(t *testing.T) {
	byName := map[string]string{}
	for _, f := range goFiles(t) {
		if f.test || f.pkg == "main" {
			continue
		}
		if other, ok := byName[f.pkg]; ok && other != f.dir {
			t.Errorf("packages %s and %s are both named %s", other, f.dir, f.pkg)
		}
		byName[f.pkg] = f.dir
	}
	for _, f := range goFiles(t) {
		for p, alias := range f.aliases {
			t.Errorf("%s imports %s as %s: gprof's packages are told apart by their own names", f.path, p, alias)
		}
	}
}

// TestPerfFormatOnce: perf's record format (sample-format bits, record
// types, call-chain markers) is written down once, in perfrecord, which
// the live backend and the perf.data reader both decode with.
func TestPerfFormatOnce(t *testing.T) {
	kernelNames := regexp.MustCompile(`^PERF_(SAMPLE|RECORD|CONTEXT|FORMAT)_`)
	sampleBits := regexp.MustCompile(`^(?i)(perf_)?sample_?[a-z]*$`)
	for _, f := range goFiles(t) {
		if f.dir == "perfrecord" || f.room == "bench" {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if kernelNames.MatchString(n.Sel.Name) {
					t.Errorf("%s: %s: perf's record format comes from perfrecord", f.path, n.Sel.Name)
				}
			case *ast.GenDecl:
				if n.Tok != token.CONST {
					break
				}
				for _, spec := range n.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						shift := i < len(vs.Values) && isShift(vs.Values[i])
						if kernelNames.MatchString(name.Name) || shift && sampleBits.MatchString(name.Name) {
							t.Errorf("%s: const %s: perf's record format is defined in perfrecord alone", f.path, name.Name)
						}
					}
				}
			}
			return true
		})
	}
	for _, dir := range []string{"attach/perf", "record/perfdata"} {
		if !packageImports(t)[dir]["perfrecord"] {
			t.Errorf("%s does not decode with perfrecord", dir)
		}
	}
}

func isShift(e ast.Expr) bool {
	b, ok := e.(*ast.BinaryExpr)
	return ok && b.Op == token.SHL
}

// TestObjectFilesReadByObjfile: objfile is the one place that parses
// object files (docs/architecture.md), tests included: the rest of gprof,
// and its tests, ask objfile. bench/ is a separate program and may read
// files its own way.
func TestObjectFilesReadByObjfile(t *testing.T) {
	for _, f := range goFiles(t) {
		if f.room == "objfile" || f.room == "bench" {
			continue
		}
		for _, p := range f.std {
			if p == "debug/elf" || p == "debug/macho" || p == "debug/pe" {
				t.Errorf("%s imports %s: read object files through objfile", f.path, p)
			}
		}
	}
}

// TestREADMEFitsOnAScreen: the README says what gprof is, how to set it up
// and a short tour, and links to docs/ for the rest; every docs/ page it
// links to exists.
func TestREADMEFitsOnAScreen(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 250 {
		t.Errorf("README.md has %d lines: keep it to about 250, and the rest in docs/", n)
	}
	links := regexp.MustCompile(`\]\((docs/[^)#]+)`).FindAllStringSubmatch(string(readme), -1)
	if len(links) == 0 {
		t.Error("README.md links to nothing in docs/")
	}
	for _, l := range links {
		if _, err := os.Stat(l[1]); err != nil {
			t.Errorf("README.md links to %s: %v", l[1], err)
		}
	}
}

// A goFile is one Go file of the house, as its imports and syntax read.
type goFile struct {
	path, dir, room string
	pkg             string
	test            bool
	imports         []string          // gprof's packages, relative to the module
	std             []string          // every other import
	aliases         map[string]string // gprof's packages imported under another name
	ast             *ast.File
}

var (
	goFilesOnce sync.Once
	goFilesAll  []goFile
	goFilesErr  error
)

// goFiles parses every Go file of the house once (not testdata, not
// hidden folders).
func goFiles(t *testing.T) []goFile {
	t.Helper()
	const mod = "github.com/gprof-dev/gprof/"
	goFilesOnce.Do(func() {
		goFilesErr = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") {
				return nil
			}
			af, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			dir := filepath.ToSlash(filepath.Dir(path))
			f := goFile{path: path, dir: dir, room: room(dir), pkg: af.Name.Name, ast: af,
				test: strings.HasSuffix(path, "_test.go"), aliases: map[string]string{}}
			for _, imp := range af.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				if !strings.HasPrefix(p, mod) {
					f.std = append(f.std, p)
					continue
				}
				p = strings.TrimPrefix(p, mod)
				f.imports = append(f.imports, p)
				if imp.Name != nil && imp.Name.Name != "_" {
					f.aliases[p] = imp.Name.Name
				}
			}
			goFilesAll = append(goFilesAll, f)
			return nil
		})
	})
	if goFilesErr != nil {
		t.Fatal(goFilesErr)
	}
	return goFilesAll
}

// packageImports gives each package folder's imports of gprof's packages,
// tests left out.
func packageImports(t *testing.T) map[string]map[string]bool {
	t.Helper()
	imports := map[string]map[string]bool{}
	for _, f := range goFiles(t) {
		if f.test {
			continue
		}
		if imports[f.dir] == nil {
			imports[f.dir] = map[string]bool{}
		}
		for _, p := range f.imports {
			imports[f.dir][p] = true
		}
	}
	return imports
}

// room is a package's top-level folder, as the house is drawn.
func room(dir string) string {
	r, _, _ := strings.Cut(dir, "/")
	return r
}

func underAny(dir string, tops []string) bool {
	for _, top := range tops {
		if dir == top || strings.HasPrefix(dir, top+"/") {
			return true
		}
	}
	return false
}
