//go:build linux

package main

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The Windows suspend backend runs for real under Wine: gprof cross-built
// for windows/amd64 records a MinGW-built program with a known CPU split.
// Wine implements SuspendThread, GetThreadContext, ReadProcessMemory,
// Toolhelp and the loader's module list; it lacks
// bcryptprimitives.dll!ProcessPrng, which Go binaries need to start, so a
// MinGW-built stand-in (testdata/wine/bcryptprimitives.c) goes into the
// prefix's system32.

var wineOnce struct {
	sync.Once
	dir, prefix, wine string
	err               string // why the Wine tests skip or fail
	fatal             bool
}

// wineSetup builds the shim, the program and gprof.exe and makes a Wine
// prefix, once per test binary run (wineboot takes a while).
func wineSetup(t *testing.T) (dir, prefix, wine string) {
	t.Helper()
	w := &wineOnce
	w.Do(func() {
		wine, err := exec.LookPath("wine64")
		if err != nil {
			if _, serr := os.Stat("/usr/lib/wine/wine64"); serr != nil {
				w.err = "wine64 is not installed (./test.sh installs it)"
				return
			}
			wine = "/usr/lib/wine/wine64"
		}
		if _, err := exec.LookPath("x86_64-w64-mingw32-gcc"); err != nil {
			w.err = "x86_64-w64-mingw32-gcc is not installed (./test.sh installs it)"
			return
		}
		w.wine, w.dir = wine, filepath.Join(fixtures, "wine")
		w.prefix = filepath.Join(w.dir, "prefix")
		w.fatal = true
		if err := os.MkdirAll(w.dir, 0o755); err != nil {
			w.err = err.Error()
			return
		}
		run := func(env []string, name string, args ...string) bool {
			c := exec.Command(name, args...)
			c.Dir, c.Env = w.dir, append(os.Environ(), env...)
			if b, err := c.CombinedOutput(); err != nil {
				w.err = name + " " + strings.Join(args, " ") + ": " + err.Error() + "\n" + string(b)
				return false
			}
			return true
		}
		wd, _ := os.Getwd()
		ok := run(nil, "x86_64-w64-mingw32-gcc", "-shared", "-O2", "-o", "bcryptprimitives.dll",
			filepath.Join(wd, "testdata/wine/bcryptprimitives.c"), "-ladvapi32") &&
			run(nil, "x86_64-w64-mingw32-gcc", "-O2", "-Wl,--build-id", "-o", "split.exe",
				filepath.Join(wd, "testdata/split_windows.c"))
		if !ok {
			return
		}
		build := exec.Command("go", "build", "-o", filepath.Join(w.dir, "gprof.exe"), ".")
		build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
		if b, err := build.CombinedOutput(); err != nil {
			w.err = "cross-building gprof.exe: " + err.Error() + "\n" + string(b)
			return
		}
		wineEnv := []string{"WINEPREFIX=" + w.prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml="}
		if !run(wineEnv, wine, "wineboot", "-i") {
			return
		}
		// wineboot returns before wineserver has written the prefix out.
		run(wineEnv, "wineserver", "-w")
		sys32 := filepath.Join(w.prefix, "drive_c/windows/system32/bcryptprimitives.dll")
		data, err := os.ReadFile(filepath.Join(w.dir, "bcryptprimitives.dll"))
		if err == nil {
			err = os.WriteFile(sys32, data, 0o644)
		}
		if err != nil {
			w.err = "installing the ProcessPrng shim: " + err.Error()
			return
		}
		// A first Wine process in a fresh prefix starts the prefix's
		// services, which compete for the CPUs for a few seconds: let
		// them settle before anything is measured.
		if !run(wineEnv, wine, "split.exe", "1", "0.2") {
			return
		}
		w.err, w.fatal = "", false
	})
	if w.err != "" {
		if w.fatal {
			t.Fatal(w.err)
		}
		t.Skip(w.err)
	}
	return w.dir, w.prefix, w.wine
}

// runWine runs gprof.exe under Wine in dir.
func runWine(t *testing.T, args ...string) result {
	t.Helper()
	dir, prefix, wine := wineSetup(t)
	c := exec.Command(wine, append([]string{"gprof.exe"}, args...)...)
	c.Dir = dir
	c.Env = append(os.Environ(), "WINEPREFIX="+prefix, "WINEDEBUG=-all")
	var o, e strings.Builder
	c.Stdout, c.Stderr = &o, &e
	err := c.Run()
	r := result{o.String(), e.String(), 0}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("wine: %v", err)
	}
	return r
}

// TestWineSuspendSplit: the suspend backend's shares of a 50/30/20 split
// are within 3 points, with stacks unwound by .pdata from the leaf
// through the program's thread function into Wine's kernel32 and ntdll.
func TestWineSuspendSplit(t *testing.T) {
	for _, backend := range []string{"suspend", ""} {
		name := backend
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"record", "-o", "split-" + name + ".json"}
			if backend != "" {
				args = append(args, "--backend", backend)
			}
			// 6 s of CPU: about 3400 samples, so that a share's sampling
			// error (sqrt(p(1-p)/N), 0.86 points at 50%) keeps 3 points
			// beyond 3.5 standard errors; 3 s left it at 2.5.
			r := runWine(t, append(args, "--", "./split.exe", "1", "6")...)
			if r.code != 0 {
				t.Fatalf("record under Wine: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if strings.Count(r.stdout, "cpu_ns") != 1 {
				t.Errorf("the command's output did not come through: %q", r.stdout)
			}
			rep := runReport(t, filepath.Join(wineOnce.dir, "split-"+name+".json"))
			t.Logf("%d samples", rep.Samples)
			for fn, pct := range map[string]float64{"work_a": 50, "work_b": 30, "work_c": 20} {
				f, ok := findFunc(rep.All.TopTotal, fn)
				if !ok {
					t.Errorf("%s missing from the report", fn)
					continue
				}
				t.Logf("%s %.2f%%", fn, f.TotalPct)
				if math.Abs(f.TotalPct-pct) > 3 {
					t.Errorf("%s total time %.2f%%, want %.0f%% ± 3", fn, f.TotalPct, pct)
				}
			}
			// Unwound through run (split.exe's .pdata) to the thread's
			// start in Wine's DLLs.
			// Frames in Wine's DLLs need their tables, read while sampling
			// starts (see attach/suspend/sampler.go), so fewer samples
			// reach them.
			for fn, min := range map[string]float64{"run": 90, "RtlUserThreadStart": 50} {
				f, ok := findFunc(rep.All.TopTotal, fn)
				margin(t, fn+" total %", f.TotalPct, min)
				if !ok || f.TotalPct < min {
					t.Errorf("%s total %.2f%% (found %v), want ≥ %.0f%%: stacks not unwound", fn, f.TotalPct, ok, min)
				}
			}
		})
	}
}

// TestWineSuspendAttach runs the suspend backend's Windows test binary
// under Wine: -p on a running program, stacks unwound, and no thread left
// suspended (attach/suspend/live_windows_test.go).
func TestWineSuspendAttach(t *testing.T) {
	dir, prefix, wine := wineSetup(t)
	build := exec.Command("go", "test", "-c", "-o", filepath.Join(dir, "suspend.test.exe"), "./attach/suspend")
	build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cross-building the suspend backend's tests: %v\n%s", err, b)
	}
	c := exec.Command(wine, "suspend.test.exe", "-test.run", "^TestSuspendLiveAttach$", "-test.v")
	c.Dir = dir
	c.Env = append(os.Environ(), "WINEPREFIX="+prefix, "WINEDEBUG=-all", "GPROF_SPLIT_EXE=./split.exe")
	out, err := c.CombinedOutput()
	t.Logf("%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSuspendLiveAttach") {
		t.Fatalf("suspend.test.exe under Wine: %v", err)
	}
}
