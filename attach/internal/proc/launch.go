//go:build linux

package proc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach/internal/yield"
)

// Launch mode needs sampling armed before the command's first instruction,
// and Go cannot run code between fork and exec. So gprof re-executes itself
// as a small helper: the helper blocks reading a pipe, the parent opens its
// events on the helper's pid (enable_on_exec, inherit), then writes the pipe
// and the helper execs the real command in place. The command therefore has
// the helper's pid, is gprof's child, and is in the terminal's foreground
// process group.
//
// A launched command lives within its recording, even when gprof dies by
// SIGKILL: the helper has a parent-death signal (SIGKILL), which exec
// keeps, so the kernel kills the command as gprof dies. The kernel sends
// that signal when the *thread* that forked the child exits, and Go ends
// threads (one whose goroutine exits locked to it), so the helper is
// forked from a thread kept for that alone, which lives as long as gprof.
// The command's own children are not killed: once gprof is gone, only a
// pid namespace (which needs privileges and changes what the command
// sees) or a process outliving gprof could reach them, and perf leaves
// even the command itself running. Like the children of any process that
// was killed, they are reparented and carry on; ending them is the
// command's business, as it is when gprof stops it with SIGTERM. A setuid
// command also loses the signal (the kernel clears it when credentials
// change at exec).
//
// The helper reports a failed exec (ENOENT for a bad #! interpreter,
// ENOEXEC, EACCES...) through a close-on-exec pipe, so that it is an error
// with nothing recorded, not an empty profile.

const (
	helperEnv    = "GPROF_EXEC_HELPER" // the parent's pid
	helperArg0   = "gprof-exec-helper"
	helperFd     = 3 // first ExtraFiles entry: the gate
	helperExecFd = 4 // second: where a failed exec's errno goes
)

func init() {
	// The helper must exec from the main thread: the perf events are opened
	// on the helper's pid, which is the main thread's task, and the
	// parent-death signal belongs to the thread that set it. Locking the OS
	// thread in an init function keeps main (and so ExecHelperMain) on it.
	if os.Getenv(helperEnv) != "" {
		runtime.LockOSThread()
	}
}

// ExecHelperMain must be the first statement of main. It returns at once
// unless this process is gprof's launch helper; the helper never returns.
func ExecHelperMain() {
	ppid, err := strconv.Atoi(os.Getenv(helperEnv))
	if err != nil || len(os.Args) < 3 || os.Args[0] != helperArg0 {
		return
	}
	os.Unsetenv(helperEnv)
	// Set again what fork set: exec of gprof clears the death signal when
	// gprof has file capabilities. If gprof died before this, getppid is
	// no longer gprof.
	unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	if os.Getppid() != ppid {
		os.Exit(127)
	}
	syscall.CloseOnExec(helperFd)
	syscall.CloseOnExec(helperExecFd)
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
	err = syscall.Exec(path, argv, os.Environ())
	errno, ok := err.(syscall.Errno)
	if !ok {
		errno = syscall.EINVAL
	}
	var b4 [4]byte
	binary.LittleEndian.PutUint32(b4[:], uint32(errno))
	syscall.Write(helperExecFd, b4[:])
	os.Exit(127)
}

// Launched is a command started under the helper, blocked before its exec.
type Launched struct {
	Pid  int
	cmd  *exec.Cmd
	gate *os.File // write end of the helper's pipe; nil once released
	// execErr is the read end of the pipe where the helper reports a
	// failed exec; nil once read.
	execErr *os.File

	waitOnce sync.Once
	code     int
	done     chan struct{}
}

// Launch starts the helper for the command argv, with env (nil means
// gprof's own environment) in dir ("" means gprof's own). The command is
// looked up first, so a missing command is an error before anything
// starts.
func Launch(argv, env []string, dir string) (*Launched, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command to launch")
	}
	if env == nil {
		env = os.Environ()
	}
	path, err := lookPath(argv[0], envValue(env, "PATH"), dir)
	if err != nil {
		return nil, lookPathError(argv[0], err)
	}
	self, err := os.Executable()
	if err != nil {
		self = "/proc/self/exe"
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	er, ew, err := os.Pipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       append([]string{helperArg0, path}, argv...),
		Env:        append(withoutEnv(env, helperEnv), fmt.Sprintf("%s=%d", helperEnv, os.Getpid())),
		Dir:        dir,
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		ExtraFiles: []*os.File{r, ew},
		// Go sets the signal right after fork and checks that the parent
		// is still there; the helper sets it again (see ExecHelperMain).
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	if _, err := os.Stat(cmd.Path); err != nil {
		cmd.Path = self
	}
	err = startOnKeptThread(cmd)
	r.Close()
	ew.Close()
	if err != nil {
		w.Close()
		er.Close()
		return nil, fmt.Errorf("start launch helper: %w", err)
	}
	return &Launched{Pid: cmd.Process.Pid, cmd: cmd, gate: w, execErr: er, done: make(chan struct{})}, nil
}

// forks receives the commands to start on the kept thread.
var (
	forkOnce sync.Once
	forks    chan forkRequest
)

type forkRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// startOnKeptThread starts cmd from an OS thread that never exits, so
// that the child's parent-death signal fires only when gprof itself dies.
func startOnKeptThread(cmd *exec.Cmd) error {
	forkOnce.Do(func() {
		forks = make(chan forkRequest)
		go func() {
			// Never unlocked, and the goroutine never returns: the thread
			// stays, doing nothing else, until the process ends.
			runtime.LockOSThread()
			for req := range forks {
				// The command runs under the policy gprof started
				// with, not the one its threads record under.
				done := yield.Exempt()
				req.done <- req.cmd.Start()
				done()
			}
		}()
	})
	req := forkRequest{cmd, make(chan error, 1)}
	forks <- req
	return <-req.done
}

// GainsPrivileges reports whether the command's executable is set-user-ID
// or set-group-ID, or carries file capabilities: run by a traced thread,
// the kernel would exec it without them (so gprof's ptrace backend must
// not hold it at its exec).
func (l *Launched) GainsPrivileges() bool {
	path := l.cmd.Args[1]
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return false
	}
	if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		return true
	}
	n, err := unix.Getxattr(path, "security.capability", nil)
	return err == nil && n > 0
}

// Signal sends sig to the command (or its helper), without waiting.
func (l *Launched) Signal(sig os.Signal) error { return l.cmd.Process.Signal(sig) }

// Release lets the helper exec the command.
func (l *Launched) Release() error {
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

// Started waits until the released helper has exec'd the command, and
// returns why it could not if it failed (the helper has then exited, and
// is reaped).
func (l *Launched) Started() error {
	if l.execErr == nil {
		return nil
	}
	var b [4]byte
	n, _ := io.ReadFull(l.execErr, b[:])
	l.execErr.Close()
	l.execErr = nil
	if n != len(b) {
		return nil // the pipe closed on exec: the command runs
	}
	l.Wait()
	return execError(l.cmd.Args[1], l.cmd.Args[2], syscall.Errno(binary.LittleEndian.Uint32(b[:])))
}

// execError says in one line why exec of path (given as name) failed.
func execError(path, name string, errno syscall.Errno) error {
	what := errno.Error()
	switch errno {
	case syscall.ENOENT:
		// path was there a moment ago, so what is missing is the program
		// that runs it: a script's interpreter or an ELF's loader.
		if interp, ok := shebang(path); ok {
			if _, err := os.Stat(interp); err != nil {
				what = fmt.Sprintf("bad interpreter %s: no such file or directory", interp)
			} else {
				what = fmt.Sprintf("its interpreter %s could not be run", interp)
			}
		} else {
			what = "no such file or directory (is its ELF interpreter, the dynamic loader, missing?)"
		}
	case syscall.ENOEXEC:
		what = "exec format error (not a program for this machine, or a script without a #! line)"
	case syscall.EACCES:
		if interp, ok := shebang(path); ok {
			what = fmt.Sprintf("permission denied (it, or its interpreter %s, is not executable)", interp)
		} else {
			what = "permission denied (not executable, or on a noexec mount)"
		}
	}
	return fmt.Errorf("cannot run %s: %s", name, what)
}

// shebang returns the interpreter named on path's "#!" line, if any.
func shebang(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b := make([]byte, 256)
	n, _ := io.ReadFull(f, b)
	b = b[:n]
	if !bytes.HasPrefix(b, []byte("#!")) {
		return "", false
	}
	line, _, _ := bytes.Cut(b[2:], []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return "", false
	}
	return fields[0], true
}

// Abort makes an unreleased helper exit without running the command, and
// reaps it.
func (l *Launched) Abort() {
	if l.gate != nil {
		l.gate.Close()
		l.gate = nil
	}
	if l.execErr != nil {
		l.execErr.Close()
		l.execErr = nil
	}
	l.Wait()
}

// Wait reaps the command and returns its exit code, 128+signal if it was
// killed. It may be called more than once and from several goroutines.
func (l *Launched) Wait() int {
	l.waitOnce.Do(func() {
		l.cmd.Wait()
		l.code = exitCode(l.cmd.ProcessState)
		close(l.done)
	})
	return l.code
}

// Grace periods for Stop: the command may already be exiting (Ctrl-C sent
// SIGINT to the terminal's whole foreground group), and a SIGTERM handler
// may want a moment to clean up.
const (
	stopGrace = 250 * time.Millisecond
	termGrace = 3 * time.Second
)

// Stop ends a command whose recording ended first: the command lives
// within its recording, so after a short grace it gets SIGTERM, as
// timeout(1) would send, and SIGKILL (with a notice) if it outlives that
// too, as it would anyway when gprof exits (its parent-death signal). It
// returns the exit code.
func (l *Launched) Stop(notify func(string)) int {
	go l.Wait()
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
		notify(fmt.Sprintf("%s (pid %d) ignored SIGTERM for %v; killed it", filepath.Base(l.cmd.Args[1]), l.Pid, termGrace))
		l.cmd.Process.Signal(syscall.SIGKILL)
		return l.Wait()
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

// lookPathError says in one line why name cannot be run.
func lookPathError(name string, err error) error {
	var errno syscall.Errno
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return fmt.Errorf("cannot run %s: command not found in $PATH", name)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot run %s: no such file or directory", name)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("cannot run %s: permission denied (not executable)", name)
	case errors.As(err, &errno):
		return fmt.Errorf("cannot run %s: %v", name, errno)
	}
	return fmt.Errorf("cannot run %s: %v", name, err)
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
