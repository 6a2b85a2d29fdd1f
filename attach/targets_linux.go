//go:build linux

package attach

import (
	"fmt"
	"os"
	"slices"

	"github.com/gprof-dev/gprof/attach/internal/proc"
)

// resolveTargets checks the pids and tids to attach to, the same way for
// both backends: gprof itself and kernel threads are refused (there is
// nothing of theirs to sample), a pid that is really a thread of another
// process stands for that process (with a notice, as -t is the way to
// sample one thread), and a tid whose process is attached whole is
// dropped. Tasks that do not exist are left for the backends to report.
func resolveTargets(opts *Options) error {
	notify := opts.Notice
	if notify == nil {
		notify = func(string) {}
	}
	self := os.Getpid()
	check := func(flag string, id, tgid int, comm string, kthread bool) error {
		if tgid == self {
			return fmt.Errorf("%s %d is gprof itself, which cannot profile itself", flag, id)
		}
		if kthread {
			return fmt.Errorf("%s %d is a kernel thread (%s): it has no user space to sample; use --kernel with a process that makes system calls", flag, id, comm)
		}
		return nil
	}
	var pids []int
	for _, pid := range opts.Pids {
		tgid, comm, kthread, ok := proc.TaskInfo(pid)
		if !ok {
			pids = append(pids, pid)
			continue
		}
		if err := check("pid", pid, tgid, comm, kthread); err != nil {
			return err
		}
		if tgid != pid {
			notify(fmt.Sprintf("%d is a thread of process %d (%s); recording all of process %d (-t %d records that thread alone)", pid, tgid, proc.ReadTaskComm(tgid, tgid), tgid, pid))
			pid = tgid
		}
		if !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	var tids []int
	for _, tid := range opts.Tids {
		tgid, comm, kthread, ok := proc.TaskInfo(tid)
		if !ok {
			return fmt.Errorf("thread %d: %w", tid, ErrNoSuchProcess)
		}
		if err := check("thread", tid, tgid, comm, kthread); err != nil {
			return err
		}
		if !slices.Contains(pids, tgid) && !slices.Contains(tids, tid) {
			tids = append(tids, tid)
		}
	}
	opts.Pids, opts.Tids = pids, tids
	return nil
}

// FirstMapped names the files o's command maps as it starts (its
// executable, the dynamic loader, the libraries they need), for the
// caller to read ahead before the command runs; nil without a command.
func FirstMapped(o Options) []string {
	if len(o.Command) == 0 {
		return nil
	}
	return proc.FirstMapped(o.Command, o.Env, o.Dir)
}
