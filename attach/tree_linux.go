//go:build linux

package attach

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/gprof-dev/gprof/attach/internal/proc"
)

// Descendants returns pid and the processes it started, and theirs, as
// /proc shows them now (a process whose parent exited belongs to init
// and is not found), parents before their children.
func Descendants(pid int) []int {
	all, _ := proc.ListProcesses()
	children := map[int][]int{}
	for _, p := range all {
		if ppid, ok := parentOf(p); ok {
			children[ppid] = append(children[ppid], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		kids := children[out[i]]
		slices.Sort(kids)
		out = append(out, kids...)
	}
	return out
}

// parentOf reads a process's parent from /proc/PID/stat.
func parentOf(pid int) (int, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	return ppid, err == nil
}
