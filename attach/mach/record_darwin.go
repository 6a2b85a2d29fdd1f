//go:build darwin

package mach

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/suspendwalk"
	"github.com/gprof-dev/gprof/event"
)

// The mach backend: a timer samples every thread of the targets through
// their task ports (see sampler.go for what a tick does).

const (
	machDefaultStack = 64 << 10
	machMaxStack     = 1 << 20
	machStopGrace    = 250 * time.Millisecond
	machTermGrace    = 3 * time.Second
)

// Spawn attributes (spawn.h).
const (
	posixSpawnSetSigmask     = 0x0008
	posixSpawnStartSuspended = 0x0080
)

// machTarget is one process being recorded.
type machTarget struct {
	*machProc
	task     *darwinTask // control port: threads, suspension
	readPort uint32      // task_read_for_pid's port, 0 if none
	launched *machChild
}

// close gives back every port held for the target.
func (t *machTarget) close() {
	t.sampler.close()
	if t.readPort != 0 {
		mach.machPortDeallocate(mach.self, t.readPort)
		t.readPort = 0
	}
	if t.task.port != 0 {
		mach.machPortDeallocate(mach.self, t.task.port)
		t.task.port = 0
	}
}

// mach is the one macOS backend.
func init() {
	attach.Register(attach.Driver{Name: attach.Mach, Order: 10, Start: recordMach, Settle: suspendwalk.Settle})
}

func recordMach(ctx context.Context, opts attach.Options, h event.Handler) (attach.Result, error) {
	res := attach.Result{ExitCode: -1, Backend: "mach", Event: "mach-timer"}
	if (len(opts.Pids)+len(opts.Tids) == 0) == (len(opts.Command) == 0) {
		return res, fmt.Errorf("record: exactly one of Pids (or Tids) and Command must be set")
	}
	if len(opts.Tids) > 0 {
		return res, fmt.Errorf("recording single threads (-t) is not supported on macOS; use -p PID to record the whole process: %w", attach.ErrUnsupported)
	}
	if err := loadMach(); err != nil {
		return res, fmt.Errorf("mach backend: %v", err)
	}
	notice := opts.Notice
	if notice == nil {
		notice = func(string) {}
	}
	interval, slowEvery, warning := machSchedule(opts.Interval)
	if warning != "" {
		notice(warning)
	}
	// --stack-size sizes perf's DWARF copies (64K at most); the
	// frame-pointer walk here wants the deeper frames too.
	stackSize := min(max(opts.StackSize, machDefaultStack), machMaxStack)
	if opts.Kernel {
		notice("the mach backend records no kernel frames")
	}

	var targets []*machTarget
	defer func() {
		for _, t := range targets {
			t.close()
		}
	}()
	add := func(pid int, child *machChild, argv []string) error {
		t, err := attachMach(pid, stackSize, h)
		if err != nil {
			return err
		}
		t.launched = child
		t.sampler.minRun = machMinRun(interval)
		t.sampler.argv, t.sampler.execd = argv, child != nil
		targets = append(targets, t)
		return nil
	}
	if len(opts.Command) > 0 {
		child, err := spawnSuspended(opts)
		if err != nil {
			return res, err
		}
		if err := add(child.pid, child, opts.Command); err != nil {
			child.kill()
			return res, err
		}
		// Sampling starts with the command's first instruction: the first
		// tick runs before it is let go.
		tickAll(&targets, false, &res, notice)
		if err := child.resume(); err != nil {
			child.kill()
			return res, err
		}
	} else {
		for _, pid := range opts.Pids {
			if err := add(pid, nil, nil); err != nil {
				return res, err
			}
		}
	}

	tk := newTicks(time.Now(), interval, rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid()))))
	timer := time.NewTimer(time.Until(tk.next(time.Now())))
	defer timer.Stop()
	for n := 1; len(targets) > 0; n++ {
		select {
		case <-ctx.Done():
			res.End = event.Now()
			for _, t := range targets {
				if t.launched != nil {
					res.ExitCode = t.launched.stop(notice)
				}
			}
			return res, nil
		case <-timer.C:
		}
		tickAll(&targets, n%slowEvery == 0, &res, notice)
		timer.Reset(time.Until(tk.next(time.Now())))
	}
	return res, nil
}

// tickAll samples every target once and drops the ones that are gone.
func tickAll(targets *[]*machTarget, slow bool, res *attach.Result, notice func(string)) {
	kept := (*targets)[:0]
	for _, t := range *targets {
		if t.tick(slow, notice) {
			kept = append(kept, t)
			continue
		}
		t.sampler.gone()
		t.close()
		if t.launched != nil {
			res.ExitCode = t.launched.wait()
		}
	}
	clear((*targets)[len(kept):])
	*targets = kept
}

func pidExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// attachMach gets pid's task ports: a read port first where macOS has
// task_read_for_pid (reading memory and the image list needs no more),
// then the control port that suspending threads needs.
func attachMach(pid int, stackSize int, h event.Handler) (*machTarget, error) {
	if pid == os.Getpid() {
		return nil, fmt.Errorf("pid %d is gprof itself, which cannot profile itself", pid)
	}
	if !pidExists(pid) {
		return nil, fmt.Errorf("pid %d: %w", pid, attach.ErrNoSuchProcess)
	}
	arch := suspendwalk.ARM64
	if runtime.GOARCH == "amd64" {
		arch = suspendwalk.AMD64
	}
	var name string
	if kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid); err == nil {
		name = unix.ByteSliceToString(kp.Proc.P_comm[:])
		const pTranslated = 0x00020000
		if kp.Proc.P_flag&pTranslated != 0 {
			return nil, fmt.Errorf("pid %d (%s) is an x86_64 program running under Rosetta, which the mach backend does not sample; profile an arm64 build of it: %w", pid, name, attach.ErrUnsupported)
		}
	}
	var readPort uint32
	if mach.taskReadForPid != nil && mach.taskReadForPid(mach.self, int32(pid), &readPort) != kernSuccess {
		readPort = 0
	}
	var port uint32
	if kr := mach.taskForPid(mach.self, int32(pid), &port); kr != kernSuccess {
		if readPort != 0 {
			mach.machPortDeallocate(mach.self, readPort)
		}
		if !pidExists(pid) {
			return nil, fmt.Errorf("pid %d: %w", pid, attach.ErrNoSuchProcess)
		}
		return nil, fmt.Errorf("%s: %w", attachAdvice(attachFactsFor(pid, kr)), attach.ErrPermission)
	}
	t := &machTarget{task: &darwinTask{port: port}, readPort: readPort}
	reader := t.task
	if readPort != 0 {
		reader = &darwinTask{port: readPort}
	}
	sampler := newMachSampler(t.task, arch, pid, stackSize, func(e event.Event) { h(e) }, event.Now)
	sampler.procName = name
	t.machProc = newMachProc(pid, sampler, reader, reader.dyldInfoAddr, func() bool { return pidExists(pid) })
	return t, nil
}

func attachFactsFor(pid int, kr int32) attachFacts {
	f := attachFacts{pid: pid, root: os.Geteuid() == 0, kr: (&machError{"task_for_pid", kr}).Error()}
	f.path = procPath(pid)
	var flags uint32
	if mach.csops(int32(pid), 0 /* CS_OPS_STATUS */, unsafe.Pointer(&flags), 4) == 0 {
		f.csFlags, f.csOK = flags, true
	}
	f.hasEnt = selfHasEntitlement(debuggerEntitlement)
	return f
}

// procPath returns pid's executable path, "" if unknown.
func procPath(pid int) string {
	// kern.procargs2: argc (int32), then the executable path.
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil || len(b) < 5 {
		return ""
	}
	b = b[4:]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// selfHasEntitlement reports whether gprof's own code signature carries
// the entitlement (csops CS_OPS_ENTITLEMENTS_BLOB).
func selfHasEntitlement(name string) bool {
	buf := make([]byte, 64<<10)
	if mach.csops(int32(os.Getpid()), 7, unsafe.Pointer(&buf[0]), uintptr(len(buf))) != 0 {
		return false
	}
	return bytes.Contains(buf, []byte("<key>"+name+"</key>"))
}

// machChild is a command gprof launched.
type machChild struct {
	pid  int
	proc *os.Process
	done chan struct{}
	code int
}

// spawnSuspended starts opts.Command with posix_spawn and Apple's
// POSIX_SPAWN_START_SUSPENDED: the process exists, with its task, but runs
// no instruction until resumed.
func spawnSuspended(opts attach.Options) (*machChild, error) {
	name := opts.Command[0]
	path := name
	if filepath.Base(name) == name {
		p, err := exec.LookPath(name)
		if err != nil {
			return nil, fmt.Errorf("%s: command not found", name)
		}
		path = p
	} else if !filepath.IsAbs(name) && opts.Dir != "" {
		path = filepath.Join(opts.Dir, name)
	}
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	cpath, err := unix.BytePtrFromString(path)
	if err != nil {
		return nil, err
	}
	argv, err := cStrings(opts.Command)
	if err != nil {
		return nil, err
	}
	envp, err := cStrings(env)
	if err != nil {
		return nil, err
	}
	var attr uintptr
	if rc := mach.posixSpawnattrInit(&attr); rc != 0 {
		return nil, fmt.Errorf("posix_spawnattr_init: %v", syscall.Errno(rc))
	}
	defer mach.posixSpawnattrDestroy(&attr)
	// Start suspended, with no signal blocked (the spawning Go thread's
	// mask would otherwise be inherited).
	mach.posixSpawnattrSetflags(&attr, posixSpawnStartSuspended|posixSpawnSetSigmask)
	var fa *uintptr
	if opts.Dir != "" {
		var actions uintptr
		if rc := mach.posixSpawnFileActionsInit(&actions); rc != 0 {
			return nil, fmt.Errorf("posix_spawn_file_actions_init: %v", syscall.Errno(rc))
		}
		defer mach.posixSpawnFileActionsDestroy(&actions)
		cdir, err := unix.BytePtrFromString(opts.Dir)
		if err != nil {
			return nil, err
		}
		if rc := mach.posixSpawnFileActionsAddchdir(&actions, cdir); rc != 0 {
			return nil, fmt.Errorf("working directory %s: %v", opts.Dir, syscall.Errno(rc))
		}
		fa = &actions
	}
	var pid int32
	rc := mach.posixSpawn(&pid, cpath, fa, &attr, &argv[0], &envp[0])
	runtime.KeepAlive(argv)
	runtime.KeepAlive(envp)
	if rc != 0 {
		return nil, fmt.Errorf("start %s: %v", name, syscall.Errno(rc))
	}
	proc, err := os.FindProcess(int(pid))
	if err != nil {
		return nil, err
	}
	c := &machChild{pid: int(pid), proc: proc, done: make(chan struct{}), code: -1}
	go func() {
		defer close(c.done)
		if ps, err := proc.Wait(); err == nil {
			c.code = machExitCode(ps)
		}
	}()
	return c, nil
}

// resume lets a process started suspended run: SIGCONT ends the stop
// POSIX_SPAWN_START_SUSPENDED puts it in.
func (c *machChild) resume() error {
	if err := syscall.Kill(c.pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("resume pid %d: %v", c.pid, err)
	}
	return nil
}

func (c *machChild) kill() {
	syscall.Kill(c.pid, syscall.SIGKILL)
	<-c.done
}

func (c *machChild) wait() int {
	<-c.done
	return c.code
}

// stop ends a command whose recording ended first, as on Linux: a short
// grace, then SIGTERM, then SIGKILL.
func (c *machChild) stop(notify func(string)) int {
	select {
	case <-c.done:
		return c.code
	case <-time.After(machStopGrace):
	}
	syscall.Kill(c.pid, syscall.SIGTERM)
	select {
	case <-c.done:
		return c.code
	case <-time.After(machTermGrace):
		notify(fmt.Sprintf("pid %d ignored SIGTERM for %v; killed it", c.pid, machTermGrace))
		return c.killAndWait()
	}
}

func (c *machChild) killAndWait() int {
	syscall.Kill(c.pid, syscall.SIGKILL)
	return c.wait()
}

func machExitCode(ps *os.ProcessState) int {
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

// cStrings is a NULL-terminated array of C strings, as execve takes.
func cStrings(ss []string) ([]*byte, error) {
	out := make([]*byte, len(ss)+1)
	for i, s := range ss {
		p, err := unix.BytePtrFromString(s)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}
