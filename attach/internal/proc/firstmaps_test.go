//go:build linux

package proc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFirstMappedIsWhatTheProgramMaps checks FirstMapped's guess against a
// real program's mappings: a C program linked to libm and to a library of
// its own found through its RUNPATH ($ORIGIN), run for real. Every file
// it names must be mapped, and every ELF file mapped at start must be
// named.
func TestFirstMappedIsWhatTheProgramMaps(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc to build the program")
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	if err := os.Mkdir(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gcc := func(args ...string) {
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, out)
		}
	}
	gcc("-shared", "-fPIC", "-o", filepath.Join(lib, "libown.so"), write("own.c", "double own(double x) { return x * 2; }\n"))
	gcc("-o", filepath.Join(dir, "prog"), write("prog.c", `#include <math.h>
#include <stdio.h>
#include <unistd.h>
double own(double);
int main(int argc, char **argv) {
	printf("%f\n", own(sqrt(argc + 1.0)));
	fflush(stdout);
	pause();
	return 0;
}
`), "-L"+lib, "-lown", "-lm", "-Wl,-rpath,$ORIGIN/lib", "-Wl,--enable-new-dtags", "-Wl,--no-as-needed")

	// Looked up in PATH, as a launch would.
	guess := FirstMapped([]string{"prog"}, []string{"PATH=/nonexistent:" + dir}, "")
	if len(guess) == 0 {
		t.Fatal("FirstMapped named nothing")
	}
	if want, _ := filepath.EvalSymlinks(filepath.Join(dir, "prog")); guess[0] != want {
		t.Errorf("first file %s, want the executable %s", guess[0], want)
	}

	cmd := exec.Command(filepath.Join(dir, "prog"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err) // it printed: every library is loaded
	}
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var mapped []string
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") || slices.Contains(mapped, f[5]) {
			continue
		}
		if isELF(f[5]) {
			mapped = append(mapped, f[5])
		}
	}
	for _, p := range guess {
		if !slices.Contains(mapped, p) {
			t.Errorf("FirstMapped named %s, which the program did not map (it mapped %v)", p, mapped)
		}
	}
	for _, p := range mapped {
		if !slices.Contains(guess, p) {
			t.Errorf("the program mapped %s, which FirstMapped did not name (it named %v)", p, guess)
		}
	}
}

// TestFirstMappedScript: a script's first files are its interpreter's,
// through env too.
func TestFirstMappedScript(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	want, _ := filepath.EvalSymlinks(sh)
	dir := t.TempDir()
	for _, line := range []string{"#!" + sh, "#!/usr/bin/env sh", "#!/usr/bin/env -S sh -e"} {
		p := filepath.Join(dir, "script")
		if err := os.WriteFile(p, []byte(line+"\necho hi\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		got := FirstMapped([]string{p}, []string{"PATH=" + filepath.Dir(sh)}, "")
		if len(got) == 0 || got[0] != want {
			t.Errorf("%q: FirstMapped = %v, want %s first", line, got, want)
		}
	}
	if got := FirstMapped([]string{"no-such-command-here"}, []string{"PATH=" + dir}, ""); got != nil {
		t.Errorf("a command not found: FirstMapped = %v, want nil", got)
	}
}

func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = f.Read(magic[:])
	return err == nil && string(magic[:]) == "\x7fELF"
}
