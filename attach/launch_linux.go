//go:build linux

package attach

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Launch mode needs sampling armed before the command's first instruction,
// and Go cannot run code between fork and exec. So gprof re-executes itself
// as a small helper: the helper blocks reading a pipe, the parent opens its
// events on the helper's pid (enable_on_exec, inherit), then writes the pipe
// and the helper execs the real command in place. The command therefore has
// the helper's pid, is gprof's child, and is in the terminal's foreground
// process group.

const (
	helperEnv  = "GPROF_EXEC_HELPER"
	helperArg0 = "gprof-exec-helper"
	helperFd   = 3 // first ExtraFiles entry
)

func init() {
	// The helper must exec from the main thread: the perf events are opened
	// on the helper's pid, which is the main thread's task. Locking the OS
	// thread in an init function keeps main (and so ExecHelperMain) on it.
	if os.Getenv(helperEnv) == "1" {
		runtime.LockOSThread()
	}
}

// ExecHelperMain must be the first statement of main. It returns at once
// unless this process is gprof's launch helper; the helper never returns.
func ExecHelperMain() {
	if os.Getenv(helperEnv) != "1" || len(os.Args) < 3 || os.Args[0] != helperArg0 {
		return
	}
	os.Unsetenv(helperEnv)
	syscall.CloseOnExec(helperFd)
	var b [1]byte
	n, _ := syscall.Read(helperFd, b[:])
	if n != 1 || b[0] != 'g' {
		// The parent gave up (or died) before releasing us.
		os.Exit(127)
	}
	if unix.Gettid() != os.Getpid() {
		fmt.Fprintln(os.Stderr, "gprof: launch helper is not on the main thread; the profile may be empty")
	}
	path, argv := os.Args[1], os.Args[2:]
	err := syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "gprof: exec %s: %v\n", path, err)
	os.Exit(127)
}

// launched is a command started under the helper, blocked before its exec.
type launched struct {
	Pid  int
	cmd  *exec.Cmd
	gate *os.File // write end of the helper's pipe; nil once released

	waitOnce sync.Once
	code     int
	done     chan struct{}
}

// launch starts the helper for opts.Command. The command is looked up first,
// so a missing command is an error before anything starts.
func launch(opts Options) (*launched, error) {
	if len(opts.Command) == 0 {
		return nil, errors.New("no command to launch")
	}
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	path, err := lookPath(opts.Command[0], envValue(env, "PATH"), opts.Dir)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		self = "/proc/self/exe"
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       append([]string{helperArg0, path}, opts.Command...),
		Env:        append(withoutEnv(env, helperEnv), helperEnv+"=1"),
		Dir:        opts.Dir,
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		ExtraFiles: []*os.File{r},
	}
	if _, err := os.Stat(cmd.Path); err != nil {
		cmd.Path = self
	}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start launch helper: %w", err)
	}
	r.Close()
	return &launched{Pid: cmd.Process.Pid, cmd: cmd, gate: w, done: make(chan struct{})}, nil
}

// release lets the helper exec the command.
func (l *launched) release() error {
	if l.gate == nil {
		return errors.New("launched command already released")
	}
	_, err := l.gate.Write([]byte{'g'})
	l.gate.Close()
	l.gate = nil
	if err != nil {
		return fmt.Errorf("release launched command: %w", err)
	}
	return nil
}

// abort makes an unreleased helper exit without running the command, and
// reaps it.
func (l *launched) abort() {
	if l.gate != nil {
		l.gate.Close()
		l.gate = nil
	}
	l.wait()
}

// wait reaps the command and returns its exit code, 128+signal if it was
// killed. It may be called more than once and from several goroutines.
func (l *launched) wait() int {
	l.waitOnce.Do(func() {
		l.cmd.Wait()
		l.code = exitCode(l.cmd.ProcessState)
		close(l.done)
	})
	return l.code
}

// Grace periods for stop: the command may already be exiting (Ctrl-C sent
// SIGINT to the terminal's whole foreground group), and a SIGTERM handler
// may want a moment to clean up.
const (
	stopGrace = 250 * time.Millisecond
	termGrace = 3 * time.Second
)

// stop ends a command whose recording ended first: the command lives
// within its recording, so after a short grace it gets SIGTERM, as
// timeout(1) would send. It returns the exit code, or -1 (with a notice)
// if the command outlives SIGTERM, in which case it is left running.
func (l *launched) stop(notify func(string)) int {
	go l.wait()
	select {
	case <-l.done:
		return l.code
	case <-time.After(stopGrace):
	}
	l.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-l.done:
		return l.code
	case <-time.After(termGrace):
		// cmd.Path is gprof's helper; Args[1] is the command it exec'd.
		notify(fmt.Sprintf("%s (pid %d) ignored SIGTERM; it was left running, no longer profiled", filepath.Base(l.cmd.Args[1]), l.Pid))
		return -1
	}
}

func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
	}
	return ps.ExitCode()
}

// lookPath finds file the way execvp would with the given PATH, relative
// names being resolved against dir when set.
func lookPath(file, pathEnv, dir string) (string, error) {
	notFound := &exec.Error{Name: file, Err: exec.ErrNotFound}
	if file == "" {
		return "", notFound
	}
	if strings.Contains(file, "/") {
		p := file
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", &exec.Error{Name: file, Err: err}
		}
		if !filepath.IsAbs(p) {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, file)
		if !filepath.IsAbs(p) {
			if dir != "" {
				p = filepath.Join(dir, p)
			}
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
		}
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", notFound
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return syscall.EISDIR
	}
	if fi.Mode()&0o111 == 0 {
		return fs.ErrPermission
	}
	return unix.Access(p, unix.X_OK)
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

func withoutEnv(env []string, key string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return out
}
