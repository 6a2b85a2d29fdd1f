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
	"time"
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
	// files are the /proc files kept open (readProc); clock is now's
	// last reading, swept when they were last looked over.
	files        map[string]*procFile
	keep         int // at most this many (procFilesAllowed)
	clock, swept int64
}

// A procFile is a /proc file the probe keeps open: read again from its
// start it says what it says now, and opening it anew at each reading (a
// path walk through /proc, and a close) cost 2 to 8 times the read on a
// 2-CPU VM: statm 20 µs against 7, a thread's schedstat 16 against 2.
type procFile struct {
	fd   int
	used int64 // the probe's clock when last read
}

// At most maxProcFiles stay open, and no more than a sixteenth of the
// open files gprof may have (the others are opened at each reading): a
// process of 10,000 threads, attached under ulimit -n 1024, took every
// file gprof had left for its events. One unread for procFileIdle ns is
// closed (its process or thread is gone, or read seldom).
const (
	maxProcFiles = 256
	procFileIdle = int64(2 * time.Second)
)

// procFilesAllowed is how many /proc files the probe may keep open.
func procFilesAllowed() int {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	return int(min(uint64(maxProcFiles), lim.Cur/16))
}

// drop closes the file at path if it is kept open.
func (p *linuxProbe) drop(path string) {
	if f := p.files[path]; f != nil {
		unix.Close(f.fd)
		delete(p.files, path)
	}
}

// readProc reads the /proc file at path into p.buf from its start.
func (p *linuxProbe) readProc(path string) (int, error) {
	if f := p.files[path]; f != nil {
		n, err := unix.Pread(f.fd, p.buf[:], 0)
		if err != nil || n <= 0 {
			p.drop(path)
			return n, err
		}
		f.used = p.clock
		return n, nil
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	n, err := unix.Read(fd, p.buf[:])
	if err != nil || n <= 0 || len(p.files) >= p.keep {
		unix.Close(fd)
		return n, err
	}
	if p.files == nil {
		p.files = map[string]*procFile{}
	}
	p.files[path] = &procFile{fd: fd, used: p.clock}
	return n, nil
}

func newCounterProbe() counterProbe {
	p := &linuxProbe{page: int64(unix.Getpagesize()), keep: procFilesAllowed()}
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

// close releases the power events and the files kept open.
func (p *linuxProbe) close() {
	for _, f := range p.files {
		unix.Close(f.fd)
	}
	p.files = nil
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
	statm := "/proc/" + strconv.Itoa(pid) + "/statm"
	var ts unix.Timespec
	if unix.ClockGettime(int32(^pid<<3|2), &ts) != nil {
		p.drop(statm) // the process is gone
		return 0, 0, false
	}
	n, err := p.readProc(statm)
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
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1) // unsorted, unlike os.ReadDir
	d.Close()
	for _, name := range names {
		tid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		n, err := p.readProc(dir + "/" + name + "/schedstat")
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

func (p *linuxProbe) now() int64 {
	p.clock = event.Now()
	if p.clock-p.swept > procFileIdle/2 {
		p.swept = p.clock
		for path, f := range p.files {
			if p.clock-f.used > procFileIdle {
				unix.Close(f.fd)
				delete(p.files, path)
			}
		}
	}
	return p.clock
}

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
