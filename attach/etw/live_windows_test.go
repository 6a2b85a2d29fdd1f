//go:build windows

package etw

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/event"
)

// These tests run the ETW backend for real; they need an elevated prompt
// and real Windows (Wine's ETW delivers nothing, which they check is
// reported). Nothing here has run yet: see docs/windows.md.

const etwSpinSource = `package main

import "time"

//go:noinline
func leaf(n int) int { for i := 0; i < 1000; i++ { n = n*31 + i }; return n }

//go:noinline
func middle(n int) int { return leaf(n) + 1 }

func main() {
	end := time.Now().Add(400 * time.Millisecond)
	n := 0
	for time.Now().Before(end) {
		n = middle(n)
	}
	println(n != 42)
}
`

func buildETWSpin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(etwSpinSource), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "spin.exe")
	cmd := exec.Command("go", "build", "-o", out, "main.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=off", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

func ownSessionRunning() bool {
	return slices.Contains(etwSessionNames(), etwSessionName(os.Getpid()))
}

func TestETWLiveLaunch(t *testing.T) {
	spin := buildETWSpin(t)
	var samples, deep int
	var maps []event.Map
	res, err := attach.Record(context.Background(), attach.Options{Command: []string{spin}, Interval: time.Millisecond, Backend: "etw"}, func(e event.Event) {
		switch e := e.(type) {
		case *event.Sample:
			samples++
			if len(e.Stack) >= 3 {
				deep++
			}
		case *event.Map:
			maps = append(maps, *e)
		}
	})
	if ownSessionRunning() {
		t.Error("the ETW session is still running after Record returned")
	}
	if err != nil {
		t.Skipf("ETW backend not usable here (needs an elevated prompt on real Windows): %v", err)
	}
	if res.ExitCode != 0 || res.Backend != "etw" {
		t.Errorf("result %+v", res)
	}
	if samples < 100 || deep < samples/2 {
		t.Errorf("%d samples, %d with 3 frames or more, over 400ms of a busy loop", samples, deep)
	}
	exe := false
	for _, m := range maps {
		if strings.EqualFold(filepath.Base(m.Path), "spin.exe") {
			exe = true
			if _, err := os.Stat(m.Path); err != nil {
				t.Errorf("image path %q does not open: %v", m.Path, err)
			}
		}
	}
	if !exe {
		t.Errorf("no image load of spin.exe among %d maps", len(maps))
	}
}

// TestETWLiveStaleSession starts a session under the name a killed gprof
// would have left and checks that the next recording stops it.
func TestETWLiveStaleSession(t *testing.T) {
	if err := enableProfilePrivilege(); err != nil {
		t.Skipf("not elevated: %v", err)
	}
	name := etwSessionName(999_999_999) // no such process
	props := etwProperties(name, newSessionGUID(), runtime.NumCPU())
	n, _ := windows.UTF16PtrFromString(name)
	var h uint64
	if r, _, _ := procStartTraceW.Call(uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(n)), uintptr(unsafe.Pointer(&props[0]))); r != 0 {
		t.Skipf("cannot start a kernel session: %v", windows.Errno(r))
	}
	defer controlStop(h, name)
	var notices []string
	stopStaleSessions(func(s string) { notices = append(notices, s) })
	if slices.Contains(etwSessionNames(), name) {
		t.Errorf("stale session %s still running; notices %q", name, notices)
	}
}
