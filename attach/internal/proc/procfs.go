//go:build linux

package proc

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// ReadSysctlInt reads an integer from /proc/sys/kernel/NAME.
func ReadSysctlInt(name string) (int, bool) {
	data, err := os.ReadFile("/proc/sys/kernel/" + name)
	if err != nil {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return v, err == nil
}

// OnlineCPUs lists the online CPUs ("0-3,5" in /sys).
func OnlineCPUs() []int {
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

// ProcessExists reports whether /proc/PID names a live (or zombie) process.
func ProcessExists(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.Stat(fmt.Sprintf("/proc/%d/task", pid))
	return err == nil
}

// ProcessState returns the state letter from /proc/PID/stat ('R', 'S',
// 'T', 'Z', ...), or 0.
func ProcessState(pid int) byte {
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

// ListProcesses returns the ids of every process in /proc, sorted.
func ListProcesses() ([]int, error) {
	return listIDs("/proc")
}

// ListTasks returns the thread ids of pid, sorted.
func ListTasks(pid int) ([]int, error) {
	return listIDs(fmt.Sprintf("/proc/%d/task", pid))
}

// listIDs returns the numeric names in dir, sorted.
func listIDs(dir string) ([]int, error) {
	f, err := os.Open(dir)
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

func ReadTaskComm(pid, tid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

// pfKthread is PF_KTHREAD in a task's flags (field 9 of /proc/PID/stat).
const pfKthread = 0x00200000

// TaskInfo returns the thread group (process) of task tid, its name, and
// whether it is a kernel thread. ok is false when there is no such task.
func TaskInfo(tid int) (tgid int, comm string, kthread, ok bool) {
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

// MapFilePath is the map_files path that opens the file mapped at
// [start, end) of pid while the process lives.
func MapFilePath(pid int, start, end uint64) string {
	return fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, start, end)
}

// ReadCmdline returns /proc/PID/cmdline split at NULs, or nil.
func ReadCmdline(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(data) == 0 {
		return nil
	}
	data = []byte(strings.TrimSuffix(string(data), "\x00"))
	return strings.Split(string(data), "\x00")
}
