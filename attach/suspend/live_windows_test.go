//go:build windows

package suspend

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/event"
)

// TestSuspendLiveAttach records a running program (GPROF_SPLIT_EXE: a
// build of testdata/split_windows.c; e2e_wine_test.go runs this under
// Wine) with -p for two seconds, then checks that samples came with unwound
// stacks and that no thread of it is left suspended.
func TestSuspendLiveAttach(t *testing.T) {
	exe := os.Getenv("GPROF_SPLIT_EXE")
	if exe == "" {
		t.Skip("GPROF_SPLIT_EXE is not set (e2e_wine_test.go sets it)")
	}
	cmd := exec.Command(exe, "1", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	time.Sleep(300 * time.Millisecond)
	pid := cmd.Process.Pid

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var samples, deep int
	type counts struct {
		samples, deep int
		cpu           int64
	}
	byTid := map[int]*counts{}
	res, err := attach.Record(ctx, attach.Options{Pids: []int{pid}, Backend: "suspend", Interval: time.Millisecond}, func(e event.Event) {
		if s, ok := e.(*event.Sample); ok {
			samples++
			c := byTid[s.Tid]
			if c == nil {
				c = &counts{}
				byTid[s.Tid] = c
			}
			c.samples++
			c.cpu += s.CPUDelta
			if len(s.Stack) >= 3 {
				deep++
				c.deep++
			}
		}
	})
	for tid, c := range byTid {
		t.Logf("thread %d: %d samples, %d deep, %v CPU", tid, c.samples, c.deep, time.Duration(c.cpu))
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Backend != "suspend" || samples < 20 || deep < samples/2 {
		t.Errorf("backend %s, %d samples, %d with 3 or more frames", res.Backend, samples, deep)
	}
	// SuspendThread returns the count before: 0 for every thread.
	p := &liveWinProc{pid: uint32(pid)}
	ids, err := p.threads()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		h, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, id)
		if err != nil {
			continue
		}
		r, _, _ := procSuspendThread.Call(uintptr(h))
		windows.ResumeThread(h)
		windows.CloseHandle(h)
		if r != 0 {
			t.Errorf("thread %d was left suspended (count %d)", id, r)
		}
	}
	t.Logf("%d samples, %d with 3+ frames, %d threads checked", samples, deep, len(ids))
}
