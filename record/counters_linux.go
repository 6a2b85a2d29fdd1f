//go:build linux

package record

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"github.com/gprof-dev/gprof/event"
	"golang.org/x/sys/unix"
)

// linuxProbe reads /proc/PID/statm and the process's CPU clock.
type linuxProbe struct {
	buf      [256]byte
	page     int64
	power    []powerEvent
	powerWhy string
	readings []energyReading
}

func newCounterProbe() counterProbe {
	p := &linuxProbe{page: int64(unix.Getpagesize())}
	p.power, p.powerWhy = openPower()
	if len(p.power) > 0 {
		p.powerWhy = ""
	}
	return p
}

func (p *linuxProbe) energy() []energyReading {
	p.readings = p.readings[:0]
	var b [8]byte
	for _, e := range p.power {
		if n, err := unix.Read(e.fd, b[:]); err == nil && n == 8 {
			p.readings = append(p.readings, energyReading{e.name, float64(binary.NativeEndian.Uint64(b[:])) * e.scale})
		}
	}
	return p.readings
}

func (p *linuxProbe) powerState() string { return p.powerWhy }

// close releases the power events.
func (p *linuxProbe) close() {
	for _, e := range p.power {
		unix.Close(e.fd)
	}
	p.power = nil
}

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

func (p *linuxProbe) threadsCPU(pid int, into map[int]int64) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fd, err := unix.Open(dir+"/"+e.Name()+"/schedstat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		n, err := unix.Read(fd, p.buf[:])
		unix.Close(fd)
		if err != nil || n <= 0 {
			continue
		}
		// schedstat: time on the CPU (ns), time waiting, timeslices.
		var ns int64
		for _, b := range p.buf[:n] {
			if b < '0' || b > '9' {
				break
			}
			ns = ns*10 + int64(b-'0')
		}
		into[tid] = ns
	}
}

func (p *linuxProbe) selfCPU() int64 { return clockNs(unix.CLOCK_PROCESS_CPUTIME_ID) }

func (p *linuxProbe) threadCPU() int64 { return clockNs(unix.CLOCK_THREAD_CPUTIME_ID) }

func (p *linuxProbe) now() int64 { return event.Now() }

func clockNs(id int32) int64 {
	var ts unix.Timespec
	unix.ClockGettime(id, &ts)
	return ts.Nano()
}

// The power PMU (/sys/bus/event_source/devices/power), read system-wide
// on the CPU its cpumask names, as `perf stat -e power/energy-pkg/` does.

const powerPMU = "/sys/bus/event_source/devices/power"

type powerEvent struct {
	name  string
	fd    int
	scale float64 // Joules per count
}

// openPower opens every energy event of the power PMU; why says why there
// are none.
func openPower() (evs []powerEvent, why string) {
	typ, err := readSysInt(powerPMU + "/type")
	if err != nil {
		return nil, "no power PMU (perf's power events are absent, as in most VMs): no energy recorded"
	}
	cpu := 0
	if b, err := os.ReadFile(powerPMU + "/cpumask"); err == nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(b)), ",")
		first, _, _ = strings.Cut(first, "-")
		cpu, _ = strconv.Atoi(first)
	}
	files, _ := filepath.Glob(powerPMU + "/events/energy-*")
	for _, f := range files {
		name := filepath.Base(f)
		if strings.Contains(name, ".") {
			continue // .scale, .unit
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		v, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "event=")
		if !ok {
			continue
		}
		config, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
		if err != nil {
			continue
		}
		scale := 1.0
		if b, err := os.ReadFile(f + ".scale"); err == nil {
			if s, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil {
				scale = s
			}
		}
		attr := unix.PerfEventAttr{Type: uint32(typ), Config: config, Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{}))}
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			why = fmt.Sprintf("the power PMU's events cannot be opened (%v; system-wide events need root or CAP_PERFMON): no energy recorded", err)
			continue
		}
		evs = append(evs, powerEvent{name: strings.TrimPrefix(name, "energy-"), fd: fd, scale: scale})
	}
	if len(evs) == 0 && why == "" {
		why = "the power PMU has no energy events: no energy recorded"
	}
	return evs, why
}

func readSysInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
