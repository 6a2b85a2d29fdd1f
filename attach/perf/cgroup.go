//go:build linux

package perf

// A launched command's own cgroup. gprof varies the sampling interval of
// per-CPU events (pace.go), which per-thread events cannot have: a period
// change reaches a per-thread event through an inter-processor interrupt
// (a tick's wait on some virtual machines), and inherited events have no
// file to change it through. Per-CPU events of all tasks sample every
// process on the machine, which costs a stack copy each and drowns the
// rings on a busy host; per-CPU events of one cgroup (PERF_FLAG_PID_CGROUP)
// count only while that cgroup's tasks run, as a per-thread event would.
// So a launched command gets a cgroup of its own, a child of gprof's in the
// unified (v2) hierarchy, with no controller enabled: it changes nothing
// the command sees or is allowed. Where none can be made (not root, a
// read-only /sys/fs/cgroup, no cgroup v2), gprof samples per thread, at a
// fixed interval, and says so.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

type cgroup struct {
	dir, parent string
	fd          int
}

var cgroupSeq atomic.Int64

// newCgroup makes a cgroup for a launched command, beside nothing and
// below gprof's own.
func newCgroup() (*cgroup, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(mount, own)
	removeStale(parent)
	dir := filepath.Join(parent, fmt.Sprintf("gprof-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Rmdir(dir)
		return nil, err
	}
	return &cgroup{dir: dir, parent: parent, fd: fd}, nil
}

// add moves process pid (all its threads) into the cgroup.
func (c *cgroup) add(pid int) error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
}

// populated reports whether a process of the command's is still in the
// cgroup (the command, or a child that outlived it): the kernel's own
// count, which no race with a fork can fool. ok is false when the cgroup
// cannot say (its files gone or unreadable).
func (c *cgroup) populated() (populated, ok bool) {
	data, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
	if err != nil {
		return false, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, found := strings.CutPrefix(line, "populated "); found {
			return v != "0", true
		}
	}
	return false, false
}

// remove moves what is left in the cgroup (the command's children that
// outlive it) back to gprof's, and removes it.
func (c *cgroup) remove() {
	if c == nil {
		return
	}
	unix.Close(c.fd)
	for try := 0; try < 50; try++ {
		procs, _ := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
		for _, p := range strings.Fields(string(procs)) {
			os.WriteFile(filepath.Join(c.parent, "cgroup.procs"), []byte(p), 0)
		}
		// A process that just exited leaves the cgroup a moment later.
		if err := unix.Rmdir(c.dir); err == nil || errors.Is(err, unix.ENOENT) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// removeStale removes the cgroups that a gprof killed outright (SIGKILL)
// left in dir: those of a pid that no longer runs, once empty (the
// command dies with its gprof; what it started and left may still be in
// one, which then stays).
func removeStale(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		var pid, n int
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "gprof-") {
			continue
		}
		if _, err := fmt.Sscanf(e.Name(), "gprof-%d-%d", &pid, &n); err != nil || pid == os.Getpid() {
			continue
		}
		if unix.Kill(pid, 0) == unix.ESRCH {
			unix.Rmdir(filepath.Join(dir, e.Name()))
		}
	}
}

// cgroup2Mount returns where the unified cgroup hierarchy is mounted.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) >= 5 && fields[3] == "/" {
			return fields[4], nil
		}
	}
	return "", errors.New("no cgroup v2 hierarchy mounted")
}

// ownCgroup returns gprof's cgroup in the unified hierarchy.
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("gprof is in no cgroup v2")
}

// eventOpen opens an event for tid on cpu; a per-CPU one (tid -1) counts
// only the launched command's cgroup when it has one.
func (s *perfSession) eventOpen(a *unix.PerfEventAttr, tid, cpu int) (int, error) {
	flags := unix.PERF_FLAG_FD_CLOEXEC
	if tid == -1 && s.cgroup != nil {
		tid, flags = s.cgroup.fd, flags|unix.PERF_FLAG_PID_CGROUP
	}
	return perfEventOpen(a, tid, cpu, -1, flags)
}
