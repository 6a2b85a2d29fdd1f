package symbolize

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/profile"
)

// A profile's Mach-O and PE libraries are named at the end of a recording
// or by convert, as ELF ones are: a Go program built for macOS and for
// Windows, main.main at its address.
func TestProfileNamesMachOAndPE(t *testing.T) {
	for _, goos := range []string{"darwin", "windows"} {
		t.Run(goos, func(t *testing.T) {
			exe := filepath.Join(t.TempDir(), "prog")
			cmd := exec.Command("go", "build", "-C", "testdata/goprog", "-o", exe, ".")
			cmd.Env = append(cmd.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			f, err := objfile.Open(exe)
			if err != nil {
				t.Fatal(err)
			}
			id := f.Identity()
			var mainAddr uint64
			syms, err := f.Symbols()
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range syms {
				if s.Name == "main.main" {
					mainAddr = s.Addr
				}
			}
			f.Close()
			if mainAddr == 0 {
				t.Fatal("no main.main symbol")
			}
			lib := profile.Lib{Start: 0x10000000, End: 0x20000000, Name: "prog", Path: exe,
				DebugName: id.DebugName, BreakpadID: id.BreakpadID}
			rel := mainAddr - id.Base
			th := &profile.Thread{Tid: 1, Main: true}
			th.Samples.Add(th.InternStack([]profile.Frame{{Address: lib.Start + rel}}), 0, -1)
			p := &profile.Profile{Processes: []*profile.Process{{Pid: 1, Libs: []profile.Lib{lib}, Threads: []*profile.Thread{th}}}}
			if _, err := Profile(p, Options{}); err != nil {
				t.Fatal(err)
			}
			fr := p.Symbols.Lookup(lib.Key(), rel)
			if len(fr) == 0 || fr[0].Function != "main.main" {
				t.Errorf("%s: %+v at %#x, want main.main", goos, fr, rel)
			}
		})
	}
}
