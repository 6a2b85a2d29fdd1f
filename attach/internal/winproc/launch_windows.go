//go:build windows

package winproc

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Child is a command launched for a Windows backend (etw or suspend).
// It is created suspended, so sampling can start before it runs a single
// instruction, and put in a job object that kills it when gprof's handle
// to the job closes: gprof exiting in any way, TerminateProcess included
// (the Windows analogue of PR_SET_PDEATHSIG), so a launched command does
// not outlive its recording.
type Child struct {
	cmd  *exec.Cmd
	job  windows.Handle
	done chan int // its exit status, once; put back by whoever reads it
}

// LaunchSuspended starts argv (with env and dir, as exec.Cmd takes them)
// with its threads suspended, its standard streams gprof's own.
func LaunchSuspended(argv, env []string, dir string) (*Child, error) {
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
	c := &Child{cmd: cmd, job: job, done: make(chan int, 1)}
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

func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Path is the command's executable, as exec.Command looked it up.
func (c *Child) Path() string { return c.cmd.Path }

// Resume lets the command's threads (its main thread) go.
func (c *Child) Resume() error {
	ids, err := Threads(uint32(c.Pid()))
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

// Exited reports whether the command has exited, without waiting.
func (c *Child) Exited() bool {
	select {
	case code := <-c.done:
		c.done <- code
		return true
	default:
		return false
	}
}

// Wait waits for the command's exit and returns its status.
func (c *Child) Wait() int {
	code := <-c.done
	c.done <- code
	c.Close()
	return code
}

// Stop waits up to grace for a command told to stop (the console's
// Ctrl-C reaches it too), then ends it by terminating its job.
func (c *Child) Stop(grace time.Duration) int {
	select {
	case code := <-c.done:
		c.done <- code
		c.Close()
		return code
	case <-time.After(grace):
	}
	windows.TerminateJobObject(c.job, 1)
	return c.Wait()
}

// Kill ends the command (and what it started) and waits for it.
func (c *Child) Kill() {
	if c.job != 0 {
		windows.TerminateJobObject(c.job, 1)
	}
	c.cmd.Process.Kill()
	c.Wait()
}

// Close releases the job; closing it kills what still runs in it.
func (c *Child) Close() {
	if c.job != 0 {
		windows.CloseHandle(c.job)
		c.job = 0
	}
}

// Threads lists the IDs of process pid's threads, in the order
// Toolhelp gives them (creation order: the main thread first).
func Threads(pid uint32) ([]uint32, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(snap)
	var ids []uint32
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID == pid {
			ids = append(ids, te.ThreadID)
		}
	}
	return ids, nil
}
