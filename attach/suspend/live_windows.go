//go:build windows

package suspend

// The suspend backend's Win32 calls (see sampler.go for what a
// tick does). It needs no administrator rights: only the access any user
// has to their own processes.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"
	"unsafe"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/suspendwalk"
	"github.com/gprof-dev/gprof/attach/internal/winproc"
	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/unwind"
	"golang.org/x/sys/windows"
)

const (
	suspendDefaultStack = 64 << 10
	suspendMaxStack     = 1 << 20
	// A Toolhelp thread list takes 6 ms under Wine (it lists every
	// thread of the system), a module list 2.5 ms: they run at these
	// intervals, not every tick.
	suspendSlowEvery = 200 * time.Millisecond // modules
	suspendListEvery = 50 * time.Millisecond  // threads
	suspendStopGrace = 3 * time.Second

	threadAccess  = windows.THREAD_SUSPEND_RESUME | windows.THREAD_GET_CONTEXT | windows.THREAD_QUERY_INFORMATION
	processAccess = windows.PROCESS_QUERY_LIMITED_INFORMATION | windows.PROCESS_VM_READ | windows.SYNCHRONIZE
)

var le = binary.LittleEndian

var (
	kernel32             = windows.NewLazySystemDLL("kernel32.dll")
	ntdll                = windows.NewLazySystemDLL("ntdll.dll")
	procSuspendThread    = kernel32.NewProc("SuspendThread")
	procGetThreadContext = kernel32.NewProc("GetThreadContext")
	procGetThreadTimes   = kernel32.NewProc("GetThreadTimes")
	procNtQueryInfoThrd  = ntdll.NewProc("NtQueryInformationThread")
)

// liveWinProc is a target process.
type liveWinProc struct {
	pid uint32
	h   windows.Handle
}

func openWinProc(pid int) (*liveWinProc, error) {
	h, err := windows.OpenProcess(processAccess, false, uint32(pid))
	if err != nil {
		if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
			return nil, fmt.Errorf("pid %d: %w (run gprof as the process's user, or elevated for another user's process)", pid, attach.ErrPermission)
		}
		return nil, fmt.Errorf("pid %d: %w", pid, attach.ErrNoSuchProcess)
	}
	return &liveWinProc{pid: uint32(pid), h: h}, nil
}

func (p *liveWinProc) close() { windows.CloseHandle(p.h) }

// exited waits on the process handle with a zero timeout. (Under Wine
// GetExitCodeProcess, which would be cheaper, sometimes answers 0 for a
// live process; the wait costs 1.6 ms there, so the sampler calls this at
// thread-list ticks only.)
func (p *liveWinProc) exited() bool {
	ev, err := windows.WaitForSingleObject(p.h, 0)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

func (p *liveWinProc) threads() ([]uint32, error) {
	if p.exited() {
		return nil, suspendwalk.ErrTaskGone
	}
	return winproc.Threads(p.pid)
}

func (p *liveWinProc) modules() ([]winModule, error) {
	var snap windows.Handle
	var err error
	for range 5 { // ERROR_BAD_LENGTH while the loader is busy: retry
		snap, err = windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPMODULE, p.pid)
		if !errors.Is(err, windows.ERROR_BAD_LENGTH) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(snap)
	var mods []winModule
	me := windows.ModuleEntry32{Size: uint32(unsafe.Sizeof(windows.ModuleEntry32{}))}
	for err = windows.Module32First(snap, &me); err == nil; err = windows.Module32Next(snap, &me) {
		mods = append(mods, winModule{
			Base: uint64(me.ModBaseAddr), Size: uint64(me.ModBaseSize),
			Path: windows.UTF16ToString(me.ExePath[:]),
		})
	}
	return mods, nil
}

func (p *liveWinProc) read(addr uint64, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	var n uintptr
	if err := windows.ReadProcessMemory(p.h, uintptr(addr), &buf[0], uintptr(len(buf)), &n); err != nil {
		return err
	}
	if int(n) != len(buf) {
		return errors.New("short read")
	}
	return nil
}

func (p *liveWinProc) open(tid uint32) (winThread, error) {
	h, err := windows.OpenThread(threadAccess, false, tid)
	if err != nil {
		return nil, err
	}
	t := &liveWinThread{h: h, proc: p}
	t.ctx = alignedContext(t.ctxBuf[:])
	return t, nil
}

// liveWinThread is an open thread. Its CONTEXT buffer is allocated with
// it, so that nothing is allocated while the thread is suspended.
type liveWinThread struct {
	h      windows.Handle
	proc   *liveWinProc
	ctxBuf [contextSize + 16]byte
	ctx    []byte
}

func (t *liveWinThread) suspend() error {
	r, _, err := procSuspendThread.Call(uintptr(t.h))
	if uint32(r) == ^uint32(0) {
		return fmt.Errorf("SuspendThread: %w", err)
	}
	return nil
}

func (t *liveWinThread) resume() error {
	_, err := windows.ResumeThread(t.h)
	return err
}

func (t *liveWinThread) context() (attach.Regs, uint64, error) {
	setContextFlags(t.ctx)
	r, _, err := procGetThreadContext.Call(uintptr(t.h), uintptr(unsafe.Pointer(&t.ctx[0])))
	if r == 0 {
		return attach.Regs{}, 0, fmt.Errorf("GetThreadContext: %w", err)
	}
	return decodeContext(t.ctx), fingerprint(t.ctx[intRegsStart:intRegsEnd]), nil
}

// fingerprint hashes register bytes (FNV-1a), without allocating.
func fingerprint(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

func (t *liveWinThread) cpu() (int64, error) {
	var c, e, k, u windows.Filetime
	r, _, err := procGetThreadTimes.Call(uintptr(t.h), uintptr(unsafe.Pointer(&c)), uintptr(unsafe.Pointer(&e)), uintptr(unsafe.Pointer(&k)), uintptr(unsafe.Pointer(&u)))
	if r == 0 {
		return 0, err
	}
	ft := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return (ft(k) + ft(u)) * 100, nil
}

// stackTop reads the thread's stack base from its TEB (NT_TIB.StackBase).
func (t *liveWinThread) stackTop() uint64 {
	var tbi [6]uintptr // THREAD_BASIC_INFORMATION
	st, _, _ := procNtQueryInfoThrd.Call(uintptr(t.h), 0, uintptr(unsafe.Pointer(&tbi[0])), unsafe.Sizeof(tbi), 0)
	if st != 0 || tbi[1] == 0 {
		return 0
	}
	var b [8]byte
	if t.proc.read(uint64(tbi[1])+8, b[:]) != nil { // NT_TIB64.StackBase
		return 0
	}
	return uint64(le.Uint64(b[:]))
}

func (t *liveWinThread) close() { windows.CloseHandle(t.h) }

// alignedContext returns a 16-byte aligned CONTEXT in b.
func alignedContext(b []byte) []byte {
	off := (16 - uintptr(unsafe.Pointer(&b[0]))%16) % 16
	return b[off : off+contextSize]
}

// suspendModuleInMemory bounds the module files read whole (see
// openModule).
const suspendModuleInMemory = 256 << 20

// loadModule reads a module's .pdata for the unwinder and its identity,
// by which the recorder keys the library and PE symbols are looked up
// later.
func loadModule(path string) (*unwind.PEImage, *attach.Image) {
	f, err := openModule(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	id := f.Identity()
	img := &attach.Image{DebugName: id.DebugName, BreakpadID: id.BreakpadID, CodeID: id.CodeID, Arch: id.Arch}
	if f.Format() != objfile.PE {
		return nil, img
	}
	pi, err := unwind.NewPEImage(f)
	if err != nil {
		return nil, img
	}
	return pi, img
}

// openModule opens a module's file, read whole into memory first:
// debug/pe reads a COFF symbol table one 18-byte record at a time, each
// a seek and a read, and under Wine each of those is a round trip to
// wineserver: reading Wine's own DLLs that way took seconds of CPU.
func openModule(path string) (*objfile.File, error) {
	if fi, err := os.Stat(path); err == nil && fi.Size() <= suspendModuleInMemory {
		if data, err := os.ReadFile(path); err == nil {
			return objfile.NewFile(bytes.NewReader(data), path)
		}
	}
	return objfile.Open(path)
}

// suspendTarget is one process being recorded.
type suspendTarget struct {
	proc     *liveWinProc
	sampler  *suspendSampler
	launched *winproc.Child
}

func (t *suspendTarget) close() {
	t.sampler.close()
	t.proc.close()
}

// The suspend backend comes after ETW: Auto uses it where ETW is denied or
// silent.
func init() {
	attach.Register(attach.Driver{Name: attach.Suspend, Order: 20, Start: recordSuspend, Settle: suspendwalk.Settle})
}

// recordSuspend is the suspend backend.
func recordSuspend(ctx context.Context, opts attach.Options, h attach.Handler) (attach.Result, error) {
	res := attach.Result{ExitCode: -1, Backend: "suspend", Event: "suspend-timer"}
	notice := opts.Notice
	if notice == nil {
		notice = func(string) {}
	}
	if len(opts.Tids) > 0 {
		return res, fmt.Errorf("recording single threads (-t) is not supported on Windows; use -p PID to record the whole process: %w", attach.ErrUnsupported)
	}
	if opts.Kernel {
		notice("the suspend backend records no kernel frames")
	}
	interval := opts.Interval
	if interval <= 0 {
		interval = time.Millisecond
	}
	slowEvery := max(int(suspendSlowEvery/interval), 1)
	listEvery := max(int(suspendListEvery/interval), 1)
	stackSize := min(max(opts.StackSize, suspendDefaultStack), suspendMaxStack)

	var targets []*suspendTarget
	defer func() {
		for _, t := range targets {
			t.close()
		}
	}()
	add := func(pid int, child *winproc.Child, argv []string) error {
		if pid == os.Getpid() {
			return fmt.Errorf("pid %d is gprof itself, which cannot profile itself", pid)
		}
		p, err := openWinProc(pid)
		if err != nil {
			return err
		}
		s := newSuspendSampler(p, pid, stackSize, func(e attach.Event) { h(e) }, attach.MonotonicNow)
		s.loadModule = loadModule
		s.async = make(chan loadedModule)
		s.argv, s.execd = argv, child != nil
		if child != nil {
			// Its loader has not run yet: no module list names it.
			s.procName = baseName(child.Path())
		}
		if fpOnlyArch {
			s.fpOnly, s.arch = true, suspendwalk.ARM64
		}
		targets = append(targets, &suspendTarget{proc: p, sampler: s, launched: child})
		return nil
	}
	if len(opts.Command) > 0 {
		child, err := winproc.LaunchSuspended(opts.Command, opts.Env, opts.Dir)
		if err != nil {
			return res, err
		}
		if err := add(child.Pid(), child, opts.Command); err != nil {
			child.Kill()
			return res, err
		}
		// The first tick (modules, main thread) runs before the command
		// is let go.
		tickSuspend(&targets, true, true, &res)
		if err := child.Resume(); err != nil {
			child.Kill()
			return res, err
		}
	} else {
		for _, pid := range opts.Pids {
			if err := add(pid, nil, nil); err != nil {
				return res, err
			}
		}
	}
	// Ticks are jittered (uniform over half to one and a half intervals)
	// so that they cannot fall in step with a periodic program.
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for n := 1; len(targets) > 0; n++ {
		select {
		case <-timer.C:
			timer.Reset(interval/2 + rand.N(interval))
		case <-ctx.Done():
			for _, t := range targets {
				if t.launched != nil {
					res.ExitCode = t.launched.Stop(suspendStopGrace)
				}
			}
			return res, nil
		}
		tickSuspend(&targets, n%listEvery == 0, n%slowEvery == 0, &res)
	}
	return res, nil
}

// tickSuspend samples every target once and drops the ones that are gone.
func tickSuspend(targets *[]*suspendTarget, list, slow bool, res *attach.Result) {
	kept := (*targets)[:0]
	for _, t := range *targets {
		if t.sampler.tick(list, slow) == nil {
			kept = append(kept, t)
			continue
		}
		t.sampler.gone()
		t.close()
		if t.launched != nil {
			res.ExitCode = t.launched.Wait()
		}
	}
	clear((*targets)[len(kept):])
	*targets = kept
}
