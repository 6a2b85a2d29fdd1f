package symbolize

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/profile"
)

// TestProfilePE: a Windows recording's modules are PE files, which
// Profile symbolizes as objects (COFF symbols here), checking the
// recorded breakpad ID as for ELF.
func TestProfilePE(t *testing.T) {
	if _, err := exec.LookPath("x86_64-w64-mingw32-gcc"); err != nil {
		t.Skip("x86_64-w64-mingw32-gcc is not installed (./test.sh installs it)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "w.c")
	os.WriteFile(src, []byte("volatile int s;\n__attribute__((noinline)) void work(void) { for (int i = 0; i < 100; i++) s += i; }\nint main(void) { work(); return 0; }\n"), 0o644)
	exe := filepath.Join(dir, "w.exe")
	if b, err := exec.Command("x86_64-w64-mingw32-gcc", "-O2", "-Wl,--build-id", "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("mingw: %v\n%s", err, b)
	}
	f, err := objfile.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	id := f.Identity()
	syms, _ := f.Symbols()
	f.Close()
	var workRVA uint64
	for _, s := range syms {
		if s.Name == "work" {
			workRVA = s.Addr - id.Base
		}
	}
	if workRVA == 0 {
		t.Fatal("no symbol work")
	}
	const loaded = 0x7ff700000000 // where the loader put it (ASLR)
	for _, c := range []struct {
		name, breakpadID string
		want             string
	}{
		{"same build", id.BreakpadID, "work"},
		{"other build", "0123456789ABCDEF0123456789ABCDEF1", ""},
	} {
		lib := profile.Lib{Start: loaded, End: loaded + 0x100000, Path: exe, Name: "w.exe",
			DebugName: "w.exe", DebugPath: exe, BreakpadID: c.breakpadID, Arch: "x86_64"}
		proc := &profile.Process{Pid: 1, Libs: []profile.Lib{lib}}
		th := &profile.Thread{Tid: 1}
		th.Samples.Add(th.InternStack([]profile.Frame{{Address: loaded + workRVA + 2, Category: profile.CategoryUser}}), 0, -1)
		proc.Threads = []*profile.Thread{th}
		p := &profile.Profile{Processes: []*profile.Process{proc}}
		if _, err := Profile(p, Options{}); err != nil {
			t.Fatal(err)
		}
		got := ""
		if fr := p.Symbols.Lookup(lib.Key(), workRVA+2); len(fr) > 0 {
			got = fr[0].Function
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
