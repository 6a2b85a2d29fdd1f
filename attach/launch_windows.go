//go:build windows

package attach

import (
	"fmt"
	"os/exec"
	"strings"
	"unicode/utf16"
	"unsafe"

	"golang.org/x/sys/windows"
)

// winChild is a command launched suspended inside a job object that kills
// it when gprof's handle to the job closes: if gprof dies, so does the
// command, as on Linux.
type winChild struct {
	pid     int
	process windows.Handle
	thread  windows.Handle // the main thread, suspended until resume
	job     windows.Handle
}

// launchSuspended starts argv with its main thread suspended, so a
// backend can start sampling before the command runs a single instruction.
func launchSuspended(argv, env []string, dir string) (*winChild, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("cannot run %s: %w", argv[0], err)
	}
	app, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, err
	}
	cmdline, err := windows.UTF16PtrFromString(windows.ComposeCommandLine(argv))
	if err != nil {
		return nil, err
	}
	var cwd *uint16
	if dir != "" {
		if cwd, err = windows.UTF16PtrFromString(dir); err != nil {
			return nil, err
		}
	}
	flags := uint32(windows.CREATE_SUSPENDED | windows.CREATE_UNICODE_ENVIRONMENT)
	var envBlock *uint16
	if env != nil {
		envBlock = environmentBlock(env)
	}
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
	si := windows.StartupInfo{Cb: uint32(unsafe.Sizeof(windows.StartupInfo{}))}
	var pi windows.ProcessInformation
	if err := windows.CreateProcess(app, cmdline, nil, nil, true, flags, envBlock, cwd, &si, &pi); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("cannot run %s: %w", argv[0], err)
	}
	c := &winChild{pid: int(pi.ProcessId), process: pi.Process, thread: pi.Thread, job: job}
	if err := windows.AssignProcessToJobObject(job, pi.Process); err != nil {
		c.kill()
		return nil, fmt.Errorf("cannot put the command in a job object: %w", err)
	}
	return c, nil
}

// resume lets the command run.
func (c *winChild) resume() error {
	if c.thread == 0 {
		return nil
	}
	_, err := windows.ResumeThread(c.thread)
	windows.CloseHandle(c.thread)
	c.thread = 0
	return err
}

// kill ends the command (and what it started) and releases the handles.
func (c *winChild) kill() {
	windows.TerminateJobObject(c.job, 1)
	c.close()
}

// exitCode returns the command's exit status, or -1 while it runs.
func (c *winChild) exitCode() int {
	var code uint32
	if err := windows.GetExitCodeProcess(c.process, &code); err != nil || code == 259 { // STILL_ACTIVE
		return -1
	}
	return int(code)
}

// wait waits up to ms milliseconds for the command to exit.
func (c *winChild) wait(ms uint32) bool {
	ev, _ := windows.WaitForSingleObject(c.process, ms)
	return ev == windows.WAIT_OBJECT_0
}

// close releases the handles; closing the job kills what still runs in it.
func (c *winChild) close() {
	if c.thread != 0 {
		windows.CloseHandle(c.thread)
		c.thread = 0
	}
	if c.process != 0 {
		windows.CloseHandle(c.process)
		c.process = 0
	}
	if c.job != 0 {
		windows.CloseHandle(c.job)
		c.job = 0
	}
}

// environmentBlock builds a CREATE_UNICODE_ENVIRONMENT block:
// NUL-terminated KEY=value strings, then a final NUL.
func environmentBlock(env []string) *uint16 {
	var b []uint16
	for _, kv := range env {
		if strings.IndexByte(kv, 0) >= 0 {
			continue
		}
		b = append(b, utf16.Encode([]rune(kv))...)
		b = append(b, 0)
	}
	b = append(b, 0)
	if len(b) == 1 {
		b = append(b, 0)
	}
	return &b[0]
}
