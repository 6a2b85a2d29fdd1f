package objfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildDir  string
	buildOnce sync.Once
	buildMu   sync.Mutex
	built     = map[string]string{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// build runs a build command once per test binary and returns the output
// path, or skips the test, saying why, when the tool is not installed.
// name identifies the artifact; in args "OUT" stands for the output path
// and "TESTDATA" for the testdata directory. env is added to the
// command's environment.
func build(t testing.TB, name string, env []string, args ...string) string {
	t.Helper()
	buildOnce.Do(func() {
		d, err := os.MkdirTemp("", "objfile-test-")
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
		t.Skipf("%s not installed (Debian: %s)", args[0], debianPackage(args[0]))
	}
	out := filepath.Join(buildDir, name)
	td, _ := filepath.Abs("testdata")
	args = append([]string(nil), args...)
	for i, a := range args {
		a = strings.ReplaceAll(a, "OUT", out)
		args[i] = strings.ReplaceAll(a, "TESTDATA", td)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, b)
	}
	built[name] = out
	return out
}

func debianPackage(tool string) string {
	switch {
	case strings.HasPrefix(tool, "x86_64-w64-mingw32-"):
		return "gcc-mingw-w64-x86-64"
	case strings.HasPrefix(tool, "llvm-"), tool == "dsymutil":
		return "llvm"
	case tool == "clang":
		return "clang"
	case tool == "gcc":
		return "gcc"
	}
	return tool
}

// tool returns the path of an independent reader such as llvm-readobj,
// or "" when it is not installed, so that tests compare with it when they
// can. Debian installs some LLVM tools only with a version suffix.
func tool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	m, _ := filepath.Glob("/usr/bin/" + name + "-[0-9]*")
	if len(m) > 0 {
		return m[len(m)-1]
	}
	return ""
}

// run runs a command and returns its standard output.
func run(t testing.TB, args ...string) string {
	t.Helper()
	b, err := exec.Command(args[0], args[1:]...).Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return string(b)
}

// Programs the tests build.

func goDarwin(t testing.TB, arch string) string {
	return build(t, "hello-darwin-"+arch, []string{"GOOS=darwin", "GOARCH=" + arch, "CGO_ENABLED=0"},
		"go", "build", "-o", "OUT", "./testdata/hello")
}

func goWindows(t testing.TB) string {
	return build(t, "hello-windows.exe", []string{"GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0"},
		"go", "build", "-o", "OUT", "./testdata/hello")
}

func mingw(t testing.TB) string {
	return build(t, "inline-mingw.exe", nil,
		"x86_64-w64-mingw32-gcc", "-g", "-O2", "-Wl,--build-id", "-o", "OUT", "TESTDATA/inline.c")
}

func clangMachO(t testing.TB) string {
	return build(t, "inline-arm64.o", nil,
		"clang", "--target=arm64-apple-macos", "-g", "-O2", "-c", "-o", "OUT", "TESTDATA/inline.c")
}

func gccELF(t testing.TB) string {
	return build(t, "inline-elf", nil, "gcc", "-g", "-O2", "-Wl,--build-id", "-o", "OUT", "TESTDATA/inline.c")
}

func mustOpen(t testing.TB, path string, opts ...Option) *File {
	t.Helper()
	f, err := Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func symbolNamed(t testing.TB, f *File, name string) Symbol {
	t.Helper()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("%s: no symbol %s among %d", f.Path(), name, len(syms))
	return Symbol{}
}
