//go:build linux

package ptrace

// What the ptrace backend reads of /proc: mappings, thread state and
// schedstat, and why a process cannot be traced.

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/proc"
	"github.com/gprof-dev/gprof/attach/internal/procmaps"
)

// refreshMaps rereads pr's mappings and reports executable ones not
// reported before.
func (s *ptSampler) refreshMaps(pr *ptProc, now int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pr.pid))
	if err != nil {
		return
	}
	pr.mapsAt = now
	// A new slice each time: the stoppers may still read the last one.
	pr.exec, pr.all = pr.exec[:0], make([]ptRange, 0, len(pr.all))
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		r, ok := parseRange(line)
		if !ok {
			continue
		}
		pr.all = append(pr.all, r)
		m := procmaps.ParseLine(string(line), pr.pid, now)
		if m == nil {
			continue
		}
		pr.exec = append(pr.exec, r)
		key := procmaps.KeyOf(m)
		if !pr.seen[key] {
			pr.seen[key] = true
			s.emit(m)
		}
	}
	all := pr.all
	pr.sh.all.Store(&all)
}

// findInterp looks for an interpreter in process pid (Options.InterpFind).
// Only the coordinator calls it, never a stopper: the first look at a
// process parses the interpreter's binary, tens of milliseconds that a
// stopper would spend holding a thread stopped and leaving its others
// unsampled (a python3 lost 5-8% of its samples so).
func (s *ptSampler) findInterp(pid int) {
	if find := s.opts.InterpFind; find != nil {
		find(pid, attach.ProcessMemory(pid))
	}
}

func parseRange(line []byte) (ptRange, bool) {
	var r ptRange
	i := 0
	for ; i < len(line) && line[i] != '-'; i++ {
	}
	j := i + 1
	for ; j < len(line) && line[j] != ' '; j++ {
	}
	if i >= len(line) || j > len(line) {
		return r, false
	}
	var err1, err2 error
	r.start, err1 = strconv.ParseUint(string(line[:i]), 16, 64)
	r.end, err2 = strconv.ParseUint(string(line[i+1:j]), 16, 64)
	return r, err1 == nil && err2 == nil && r.end > r.start
}

// findRange returns the end of the range in sorted rs that holds a.
func findRange(rs []ptRange, a uint64) (end uint64, ok bool) {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].end > a })
	if i < len(rs) && rs[i].start <= a {
		return rs[i].end, true
	}
	return 0, false
}

// taskPath returns /proc/PID/task/TID/NAME.
func (s *ptSampler) taskPath(pid, tid int, name string) string {
	b := append(s.path[:0], "/proc/"...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, "/task/"...)
	b = strconv.AppendInt(b, int64(tid), 10)
	b = append(b, '/')
	b = append(b, name...)
	s.path = b
	return string(b)
}

// readFile reads a small /proc file into the sampler's buffer; /proc files
// are read every tick for every thread, so this avoids os.File's overhead.
func (s *ptSampler) readFile(path string) ([]byte, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	n, err := unix.Read(fd, s.buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return nil, false
	}
	return s.buf[:n], true
}

// readStat returns a thread's state letter, parent pid and last CPU from
// /proc/PID/task/TID/stat.
func (s *ptSampler) readStat(pid, tid int) (state byte, ppid, cpu int, ok bool) {
	data, ok := s.readFile(s.taskPath(pid, tid, "stat"))
	if !ok {
		return 0, 0, 0, false
	}
	return parseStat(data)
}

// parseStat picks fields out of a stat line (see parseStatLine).
func parseStat(data []byte) (state byte, ppid, cpu int, ok bool) {
	l, ok := parseStatLine(data)
	return l.state, l.ppid, l.cpu, ok
}

// statLine is what the sampler reads in a stat line: the state (field
// 3), the parent pid (4), the process's thread count (20) and the CPU the
// thread last ran on (39, -1 if missing).
type statLine struct {
	state              byte
	ppid, threads, cpu int
}

// parseStatLine parses a stat line. The command name in parentheses may
// hold spaces and parentheses, so fields are counted from the last ')'.
func parseStatLine(data []byte) (l statLine, ok bool) {
	i := len(data) - 1
	for ; i >= 0 && data[i] != ')'; i-- {
	}
	if i < 0 || i+2 >= len(data) {
		return statLine{}, false
	}
	l.state = data[i+2]
	field := 3
	l.cpu = -1
	for p := i + 3; p < len(data) && field < 39; {
		for p < len(data) && data[p] == ' ' {
			p++
		}
		field++
		q := p
		for q < len(data) && data[q] != ' ' && data[q] != '\n' {
			q++
		}
		switch field {
		case 4:
			l.ppid, _ = strconv.Atoi(string(data[p:q]))
		case 20:
			l.threads, _ = strconv.Atoi(string(data[p:q]))
		case 39:
			l.cpu, _ = strconv.Atoi(string(data[p:q]))
		}
		p = q
	}
	return l, true
}

// ptSched is a thread's /proc/PID/task/TID/schedstat: its CPU time, the
// time it spent waiting for a CPU (both in ns, and for a thread on a CPU
// only as of the last timer tick or context switch), and the number of
// times it was put on a CPU. stat's utime and stime count whole clock
// ticks, too coarse to divide among samples.
type ptSched struct{ run, delay, switches int64 }

// readSchedstat reads a thread's schedstat; any thread's tid will do as
// pid.
func (s *ptSampler) readSchedstat(pid, tid int) (ptSched, bool) {
	data, ok := s.readFile(s.taskPath(pid, tid, "schedstat"))
	if !ok {
		return ptSched{}, false
	}
	return parseSchedstat(data)
}

// parseSchedstat parses a schedstat line: three numbers.
func parseSchedstat(data []byte) (ptSched, bool) {
	var f [3]int64
	i := 0
	for _, c := range data {
		if c >= '0' && c <= '9' {
			f[i] = f[i]*10 + int64(c-'0')
		} else if c == ' ' && i < 2 {
			i++
		} else {
			break
		}
	}
	return ptSched{f[0], f[1], f[2]}, i == 2
}

// exeID identifies the executable a process runs.
func exeID(pid int) ([2]uint64, bool) {
	var st unix.Stat_t
	if unix.Stat(fmt.Sprintf("/proc/%d/exe", pid), &st) != nil {
		return [2]uint64{}, false
	}
	return [2]uint64{st.Dev, st.Ino}, true
}

// ptPermissionError explains why pid cannot be traced.
func ptPermissionError(pid int, err error) error {
	if tracer := tracerPid(pid); tracer != 0 && tracer != os.Getpid() {
		return fmt.Errorf("%w: pid %d is already being traced by pid %d (a debugger?), and a thread can have only one tracer", attach.ErrPermission, pid, tracer)
	}
	const caps = "run gprof as root, or give it the capability with `sudo setcap cap_sys_ptrace+ep $(command -v gprof)`; in a container, start it with --cap-add SYS_PTRACE"
	switch scope, _ := proc.ReadSysctlInt("yama/ptrace_scope"); scope {
	case 1:
		return fmt.Errorf("%w: cannot trace pid %d (%v): kernel.yama.ptrace_scope is 1, which allows tracing only a process's own descendants; %s, or allow it with `sudo sysctl kernel.yama.ptrace_scope=0`", attach.ErrPermission, pid, err, caps)
	case 2:
		return fmt.Errorf("%w: cannot trace pid %d (%v): kernel.yama.ptrace_scope is 2, which allows tracing only with CAP_SYS_PTRACE; %s", attach.ErrPermission, pid, err, caps)
	case 3:
		return fmt.Errorf("%w: cannot trace pid %d (%v): kernel.yama.ptrace_scope is 3, which disables ptrace until the next reboot", attach.ErrPermission, pid, err)
	}
	return fmt.Errorf("%w: cannot trace pid %d (%v): a process can trace only processes of its own user that are not setuid; %s", attach.ErrPermission, pid, err, caps)
}

// tracerPid returns the TracerPid line of /proc/PID/status, or 0.
func tracerPid(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(data), "\nTracerPid:")
	if !ok {
		return 0
	}
	line, _, _ := strings.Cut(rest, "\n")
	n, _ := strconv.Atoi(strings.TrimSpace(line))
	return n
}

// waitUntraced waits, up to ptReleaseWait, until gprof traces none of
// tids: threads interrupted while they waited for a CPU, still not
// stopped when their stopper ended (ptDrainLimit). The kernel detaches
// them as the stopper's thread exits, which the Go runtime does a moment
// after its goroutine returns; a recording must not return with a target
// still traced (a test that looked at once found one, on a thread that
// ran at nice 19 beside a busy process).
func waitUntraced(tids []int) {
	self := os.Getpid()
	deadline := time.Now().Add(ptReleaseWait)
	for _, tid := range tids {
		for tracerPid(tid) == self && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
}
