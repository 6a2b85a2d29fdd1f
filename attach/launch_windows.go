//go:build windows

package attach

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// winChild is a command launched for a Windows backend (etw or suspend).
// It is created suspended, so sampling can start before it runs a single
// instruction, and put in a job object that kills it when gprof's handle
// to the job closes: gprof exiting in any way, TerminateProcess included
// (the Windows analogue of PR_SET_PDEATHSIG), so a launched command does
// not outlive its recording.
type winChild struct {
	cmd  *exec.Cmd
	job  windows.Handle
	done chan int // its exit status, once; put back by whoever reads it
}

// launchSuspended starts argv (with env and dir, as exec.Cmd takes them)
// with its threads suspended, its standard streams gprof's own.
func launchSuspended(argv, env []string, dir string) (*winChild, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env, cmd.Dir = env, dir
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED}
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot create a job object for the command: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("cannot set up the command's job object: %w", err)
	}
	if err := cmd.Start(); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("cannot run %s: %w", argv[0], err)
	}
	c := &winChild{cmd: cmd, job: job, done: make(chan int, 1)}
	if ph, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid)); err == nil {
		// Best effort: a process already in a job that forbids nesting
		// cannot join; it then outlives a killed gprof.
		windows.AssignProcessToJobObject(job, ph)
		windows.CloseHandle(ph)
	}
	go func() {
		cmd.Wait()
		c.done <- cmd.ProcessState.ExitCode()
	}()
	return c, nil
}

func (c *winChild) pid() int { return c.cmd.Process.Pid }

// resume lets the command's threads (its main thread) go.
func (c *winChild) resume() error {
	p := &liveWinProc{pid: uint32(c.pid())}
	ids, err := p.threads()
	if err != nil || len(ids) == 0 {
		return fmt.Errorf("%s: no main thread to resume: %v", c.cmd.Path, err)
	}
	for _, id := range ids {
		h, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, id)
		if err != nil {
			return fmt.Errorf("OpenThread: %w", err)
		}
		_, err = windows.ResumeThread(h)
		windows.CloseHandle(h)
		if err != nil {
			return fmt.Errorf("ResumeThread: %w", err)
		}
	}
	return nil
}

// exited reports whether the command has exited, without waiting.
func (c *winChild) exited() bool {
	select {
	case code := <-c.done:
		c.done <- code
		return true
	default:
		return false
	}
}

// wait waits for the command's exit and returns its status.
func (c *winChild) wait() int {
	code := <-c.done
	c.done <- code
	c.close()
	return code
}

// stop waits up to grace for a command told to stop (the console's
// Ctrl-C reaches it too), then ends it by terminating its job.
func (c *winChild) stop(grace time.Duration) int {
	select {
	case code := <-c.done:
		c.done <- code
		c.close()
		return code
	case <-time.After(grace):
	}
	windows.TerminateJobObject(c.job, 1)
	return c.wait()
}

// kill ends the command (and what it started) and waits for it.
func (c *winChild) kill() {
	if c.job != 0 {
		windows.TerminateJobObject(c.job, 1)
	}
	c.cmd.Process.Kill()
	c.wait()
}

// close releases the job; closing it kills what still runs in it.
func (c *winChild) close() {
	if c.job != 0 {
		windows.CloseHandle(c.job)
		c.job = 0
	}
}
