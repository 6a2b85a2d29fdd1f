//go:build darwin

package mach

// The macOS self-check: these tests run the mach backend for real, so they
// run only on a Mac, and only where gprof's test binary may attach (root,
// as docs/macos.md's one command runs them). Nothing here has run in gprof's
// CI, which has no Mac; the logic under them is tested on every OS.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/objfile"

	"github.com/ebitengine/purego"
)

const spinSource = `package main

import (
	"os"
	"time"
)

//go:noinline
func leaf(n int) int { for i := 0; i < 1000; i++ { n = n*31 + i }; return n }

//go:noinline
func middle(n int) int { return leaf(n) + 1 }

//go:noinline
func outer(n int) int { return middle(n) + 2 }

func main() {
	end := time.Now().Add(time.Duration(len(os.Args)) * 400 * time.Millisecond)
	n := 0
	for time.Now().Before(end) {
		n = outer(n)
	}
	os.Exit(n & 0)
}
`

// buildSpin builds the target program natively.
func buildSpin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(spinSource), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "spin")
	cmd := exec.Command("go", "build", "-o", out, "main.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=off", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// selfPortNames counts the port names in gprof's own IPC space.
func selfPortNames(t *testing.T) int {
	t.Helper()
	lib, err := purego.Dlopen(libSystem, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	var names func(task uint32, names **uint32, n *uint32, types **uint32, nt *uint32) int32
	purego.RegisterLibFunc(&names, lib, "mach_port_names")
	var np, tp *uint32
	var n, nt uint32
	if kr := names(mach.self, &np, &n, &tp, &nt); kr != 0 {
		t.Fatalf("mach_port_names: %d", kr)
	}
	mach.machVMDeallocate(mach.self, uint64(uintptr(unsafe.Pointer(np))), uint64(n)*4)
	mach.machVMDeallocate(mach.self, uint64(uintptr(unsafe.Pointer(tp))), uint64(nt)*4)
	return int(n)
}

func skipUnlessPermitted(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, attach.ErrPermission) {
		t.Skipf("%v\nrun the self-check as root: sudo go test -count=1 -v -run TestMachLive ./attach/", err)
	}
}

// Launch a Go program (frame pointers, no SIP), record it to its end, and
// check what the issue promises: samples with walked stacks, the
// executable identified by its UUID, system libraries identified from
// memory though no file of theirs is on disk, and no port leaked.
func TestMachLiveLaunch(t *testing.T) {
	if err := loadMach(); err != nil {
		t.Fatal(err)
	}
	spin := buildSpin(t)
	before := selfPortNames(t)
	var (
		samples, deep int
		maps          []event.Map
		execFirst     = true
		sawComm       bool
	)
	res, err := attach.Record(context.Background(), attach.Options{Command: []string{spin}, Interval: time.Millisecond}, func(e event.Event) {
		switch e := e.(type) {
		case *event.Sample:
			if !sawComm {
				execFirst = false
			}
			samples++
			if len(e.Stack) >= 4 {
				deep++
			}
		case *event.Comm:
			sawComm = sawComm || (e.Exec && e.Tid == e.Pid)
		case *event.Map:
			maps = append(maps, *e)
		}
	})
	skipUnlessPermitted(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Backend != "mach" {
		t.Errorf("result %+v", res)
	}
	if samples < 50 || deep < samples/2 {
		t.Errorf("%d samples, %d with 4 frames or more, over 400ms of a busy loop three calls deep", samples, deep)
	}
	if !execFirst {
		t.Error("a sample came before the launched command's exec Comm")
	}
	f, _ := os.ReadFile(spin)
	want := machoOracle(t, f)
	var exe, cached bool
	for _, m := range maps {
		if m.Image == nil {
			t.Errorf("map %s has no identity", m.Path)
			continue
		}
		// dyld may name it by another path to the same file (/var is a
		// symlink to /private/var, where temporary directories live).
		if filepath.Base(m.Path) == filepath.Base(spin) {
			exe = m.Image.BreakpadID == (objfile.MachOImage{UUID: want.uuid}).BreakpadID() && m.End-m.Start == want.textSize
		}
		if _, err := os.Stat(m.Path); strings.HasPrefix(m.Path, "/usr/lib/") && err != nil && m.Image.BreakpadID != "" {
			cached = true
		}
	}
	if !exe {
		t.Errorf("the executable was not reported with UUID %x and its __TEXT size (maps: %d)", want.uuid, len(maps))
	}
	if !cached {
		t.Error("no /usr/lib library from the dyld shared cache (no file on disk) was identified from memory")
	}
	// A leak of one thread port per tick would be hundreds; the slack is
	// for OS threads the Go runtime started meanwhile (a port name each).
	if after := selfPortNames(t); after > before+16 {
		t.Errorf("gprof holds %d port names after the recording, %d before: ports leak", after, before)
	}
}

// Attach to a running process, stop, and check it is left as it was: every
// thread resumed.
func TestMachLiveAttachLeavesThreadsRunning(t *testing.T) {
	if err := loadMach(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(buildSpin(t), "a", "b", "c", "d", "e", "f", "g", "h", "i")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	defer cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	samples := 0
	_, err := attach.Record(ctx, attach.Options{Pids: []int{cmd.Process.Pid}, Interval: time.Millisecond}, func(e event.Event) {
		if _, ok := e.(*event.Sample); ok {
			samples++
		}
	})
	skipUnlessPermitted(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if samples == 0 {
		t.Error("no samples")
	}
	var port uint32
	if kr := mach.taskForPid(mach.self, int32(cmd.Process.Pid), &port); kr != 0 {
		t.Fatalf("task_for_pid: %d", kr)
	}
	task := &darwinTask{port: port}
	defer task.deallocate(port)
	ports, err := task.threads()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, threadBasicInfoCount*4)
	for _, p := range ports {
		if err := task.info(p, threadBasicInfo, buf); err == nil {
			if bi, _ := decodeThreadBasicInfo(buf); bi.SuspendCount != 0 {
				t.Errorf("thread %#x left with suspend count %d", p, bi.SuspendCount)
			}
		}
		task.deallocate(p)
	}
}
