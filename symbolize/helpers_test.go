package symbolize

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildDir     string
	buildDirOnce sync.Once
	buildMu      sync.Mutex
	built        = map[string]string{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// build runs a build command once per test binary and returns the output
// path; name identifies the artifact, args are the command with "OUT"
// standing for the output path and "TESTDATA" for the testdata directory.
func build(t testing.TB, name string, args ...string) string {
	t.Helper()
	return doBuild(t, false, name, args...)
}

// buildOrSkip is build for toolchain features that may be missing.
func buildOrSkip(t testing.TB, name string, args ...string) string {
	t.Helper()
	return doBuild(t, true, name, args...)
}

func doBuild(t testing.TB, skip bool, name string, args ...string) string {
	t.Helper()
	buildDirOnce.Do(func() {
		d, err := os.MkdirTemp("", "symbolize-test-")
		if err != nil {
			panic(err)
		}
		buildDir = d
	})
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[name]; ok {
		return p
	}
	if _, err := exec.LookPath(args[0]); err != nil {
		t.Skipf("%s not installed", args[0])
	}
	out := filepath.Join(buildDir, name)
	td, _ := filepath.Abs("testdata")
	for i, a := range args {
		a = strings.ReplaceAll(a, "OUT", out)
		args[i] = strings.ReplaceAll(a, "TESTDATA", td)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = buildDir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		if skip {
			t.Skipf("toolchain cannot: %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, b)
	}
	built[name] = out
	return out
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s not installed", name)
	}
	b, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(b)
}

func systemFile(t testing.TB, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Skipf("system file %s absent", path)
	}
	return path
}
