//go:build linux

package record

import (
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
)

// linuxProbe reads /proc/PID/statm and the process's CPU clock.
type linuxProbe struct {
	buf  [256]byte
	page int64
}

func newCounterProbe() counterProbe { return &linuxProbe{page: int64(unix.Getpagesize())} }

// lockThread keeps the sampler on one OS thread, so that the thread CPU
// clock measures its own work.
func lockThread() { runtime.LockOSThread() }

func (p *linuxProbe) read(pid int) (rss, cpu int64, ok bool) {
	// The CPU clock of another process (clock_getcpuclockid's encoding:
	// CPUCLOCK_SCHED of the whole process) is exact, unlike the tick
	// counts of /proc/PID/stat.
	var ts unix.Timespec
	if unix.ClockGettime(int32(^pid<<3|2), &ts) != nil {
		return 0, 0, false
	}
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/statm", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, false
	}
	n, err := unix.Read(fd, p.buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return 0, 0, false
	}
	// statm: size resident shared text lib data dt, in pages.
	b := p.buf[:n]
	i := 0
	for i < len(b) && b[i] != ' ' {
		i++
	}
	var pages int64
	for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		pages = pages*10 + int64(b[i]-'0')
	}
	return pages * p.page, ts.Nano(), true
}

func (p *linuxProbe) selfCPU() int64 { return clockNs(unix.CLOCK_PROCESS_CPUTIME_ID) }

func (p *linuxProbe) threadCPU() int64 { return clockNs(unix.CLOCK_THREAD_CPUTIME_ID) }

func (p *linuxProbe) now() int64 { return attach.MonotonicNow() }

func clockNs(id int32) int64 {
	var ts unix.Timespec
	unix.ClockGettime(id, &ts)
	return ts.Nano()
}
