//go:build linux

package record

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestProbeKeepsProcFilesOpen: the probe reads a live process through
// files it keeps open, which say what is true at each reading, and lets
// them go once their process is gone or they go unread.
func TestProbeKeepsProcFilesOpen(t *testing.T) {
	p := newCounterProbe().(*linuxProbe)
	defer p.close()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep to read")
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	prefix := "/proc/" + strconv.Itoa(pid) + "/"
	p.now()
	if rss, _, ok := p.read(pid); !ok || rss <= 0 {
		t.Fatalf("read(%d) = %d, %v", pid, rss, ok)
	}
	threads := map[int]int64{}
	p.threadsCPU(pid, threads)
	if _, ok := threads[pid]; !ok {
		t.Fatalf("threadsCPU(%d) = %v, want its main thread", pid, threads)
	}
	if len(p.files) != 2 {
		t.Errorf("%d files kept open, want statm and the thread's schedstat", len(p.files))
	}

	// Read again, a kept file says what is true now: this thread's CPU
	// time grows as it works.
	self := map[int]int64{}
	cpuNow := func() int64 {
		clear(self)
		p.threadsCPU(os.Getpid(), self)
		var sum int64
		for _, ns := range self {
			sum += ns
		}
		return sum
	}
	before := cpuNow()
	x := 0
	for i := 0; i < 100 && cpuNow() == before; i++ {
		for j := range 1_000_000 {
			x += j ^ i
		}
	}
	if cpuNow() == before {
		t.Errorf("gprof's threads' CPU time read the same after work (%d)", x)
	}

	cmd.Process.Kill()
	cmd.Wait()
	if _, _, ok := p.read(pid); ok {
		t.Errorf("read(%d) succeeded after the process ended", pid)
	}
	if _, open := p.files[prefix+"statm"]; open {
		t.Error("statm kept open after its process ended")
	}
	// Unread for procFileIdle, the rest are closed.
	for _, f := range p.files {
		f.used -= 2 * procFileIdle
	}
	p.swept -= procFileIdle
	p.now()
	for path := range p.files {
		if strings.HasPrefix(path, prefix) {
			t.Errorf("%s still open, unread for %d ns", path, 2*procFileIdle)
		}
	}
}
