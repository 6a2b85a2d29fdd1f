//go:build linux

package attach

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// readSysctlInt reads an integer from /proc/sys/kernel/NAME.
func readSysctlInt(name string) (int, bool) {
	data, err := os.ReadFile("/proc/sys/kernel/" + name)
	if err != nil {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return v, err == nil
}

// onlineCPUs lists the online CPUs ("0-3,5" in /sys).
func onlineCPUs() []int {
	data, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err == nil {
		if cpus := parseCPUList(strings.TrimSpace(string(data))); len(cpus) > 0 {
			return cpus
		}
	}
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
}

func parseCPUList(s string) []int {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// processExists reports whether /proc/PID names a live (or zombie) process.
func processExists(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.Stat(fmt.Sprintf("/proc/%d/task", pid))
	return err == nil
}

// processState returns the state letter from /proc/PID/stat ('R', 'S',
// 'T', 'Z', ...), or 0.
func processState(pid int) byte {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return 0
	}
	return data[i+2]
}

// listTasks returns the thread ids of pid, sorted.
func listTasks(pid int) ([]int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(names))
	for _, n := range names {
		if tid, err := strconv.Atoi(n); err == nil {
			tids = append(tids, tid)
		}
	}
	sort.Ints(tids)
	return tids, nil
}

func readTaskComm(pid, tid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

// readMaps returns the executable mappings of pid as Map events.
func readMaps(pid int, t int64) ([]*Map, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var maps []*Map
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if m := parseMapsLine(sc.Text(), pid, t); m != nil {
			maps = append(maps, m)
		}
	}
	return maps, sc.Err()
}

// parseMapsLine parses "start-end perms offset maj:min inode   path".
func parseMapsLine(line string, pid int, t int64) *Map {
	fields := strings.Fields(line)
	if len(fields) < 5 || !strings.Contains(fields[1], "x") {
		return nil
	}
	lo, hi, ok := strings.Cut(fields[0], "-")
	if !ok {
		return nil
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	off, err3 := strconv.ParseUint(fields[2], 16, 64)
	maj, min, _ := strings.Cut(fields[3], ":")
	dmaj, err4 := strconv.ParseUint(maj, 16, 32)
	dmin, err5 := strconv.ParseUint(min, 16, 32)
	ino, err6 := strconv.ParseUint(fields[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil || err6 != nil {
		return nil
	}
	path := ""
	if len(fields) > 5 {
		// The path is the rest of the line after the inode column; it may
		// contain spaces.
		idx := 0
		for i := 0; i < 5; i++ {
			idx += strings.Index(line[idx:], fields[i]) + len(fields[i])
		}
		path = strings.TrimLeft(line[idx:], " \t")
	}
	m := &Map{
		Time:       t,
		Pid:        pid,
		Start:      start,
		End:        end,
		FileOffset: off,
		Path:       path,
		Dev:        unix.Mkdev(uint32(dmaj), uint32(dmin)),
		Inode:      ino,
	}
	if ino != 0 {
		m.MapFile = mapFilePath(pid, start, end)
	}
	return m
}

// pfKthread is PF_KTHREAD in a task's flags (field 9 of /proc/PID/stat).
const pfKthread = 0x00200000

// taskInfo returns the thread group (process) of task tid, its name, and
// whether it is a kernel thread. ok is false when there is no such task.
func taskInfo(tid int) (tgid int, comm string, kthread, ok bool) {
	if tid <= 0 {
		return 0, "", false, false
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return 0, "", false, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, found := strings.CutPrefix(line, "Tgid:"); found {
			tgid, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		if v, found := strings.CutPrefix(line, "Name:"); found {
			comm = strings.TrimSpace(v)
		}
	}
	if tgid <= 0 {
		return 0, "", false, false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", tid))
	if err != nil {
		return 0, "", false, false
	}
	// Fields after the name: state ppid pgrp session tty tpgid flags.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
		if f := strings.Fields(string(stat[i+1:])); len(f) > 6 {
			flags, _ := strconv.ParseUint(f[6], 10, 64)
			kthread = flags&pfKthread != 0
		}
	}
	return tgid, comm, kthread, true
}
