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
	"sync/atomic"
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
	// A Toolhelp thread list takes 6 to 12 ms under Wine (it lists every
	// thread of the system, and keeps wineserver from answering anyone
	// else meanwhile), a module list 2.5 ms: they are taken at these
	// intervals, on another goroutine. Between lists, newThreads finds
	// new threads (where NtGetNextThread cannot, the thread list comes
	// every suspendListNoProbe), a thread's CPU time read tells its exit,
	// and a stack that found no module has the modules listed sooner
	// (suspendStaleEvery).
	suspendSlowEvery   = time.Second     // modules
	suspendListEvery   = 5 * time.Second // threads
	suspendListNoProbe = 100 * time.Millisecond
	suspendStopGrace   = 3 * time.Second
	// suspendProbeMax bounds the new threads one newThreads call returns
	// (the next call goes on).
	suspendProbeMax = 64

	threadAccess  = windows.THREAD_SUSPEND_RESUME | windows.THREAD_GET_CONTEXT | windows.THREAD_QUERY_INFORMATION | windows.SYNCHRONIZE
	processAccess = windows.PROCESS_QUERY_LIMITED_INFORMATION | windows.PROCESS_VM_READ | windows.SYNCHRONIZE
	// NtGetNextThread wants PROCESS_QUERY_INFORMATION.
	probeAccess = windows.PROCESS_QUERY_INFORMATION

	statusNoMoreEntries = 0x8000001A
)

var le = binary.LittleEndian

var (
	kernel32             = windows.NewLazySystemDLL("kernel32.dll")
	ntdll                = windows.NewLazySystemDLL("ntdll.dll")
	procSuspendThread    = kernel32.NewProc("SuspendThread")
	procGetThreadContext = kernel32.NewProc("GetThreadContext")
	procGetThreadTimes   = kernel32.NewProc("GetThreadTimes")
	procNtQueryInfoThrd  = ntdll.NewProc("NtQueryInformationThread")
	procNtGetNextThread  = ntdll.NewProc("NtGetNextThread")
	procGetThreadId      = kernel32.NewProc("GetThreadId")
)

// liveWinProc is a target process.
type liveWinProc struct {
	pid uint32
	h   windows.Handle
	// gone is set by a goroutine that waits for the process's exit
	// (stop ends that wait); waited is closed when it returns. Without
	// it (stop is 0), exited waits on the process with a zero timeout.
	gone   atomic.Bool
	stop   windows.Handle
	waited chan struct{}
	// last is the newest thread newThreads has seen; probe says the
	// handle allows NtGetNextThread; ids is newThreads' answer.
	last  windows.Handle
	probe bool
	ids   []uint32
}

func openWinProc(pid int) (*liveWinProc, error) {
	p := &liveWinProc{pid: uint32(pid), probe: true, ids: make([]uint32, 0, suspendProbeMax)}
	h, err := windows.OpenProcess(processAccess|probeAccess, false, uint32(pid))
	if err != nil {
		p.probe = false
		h, err = windows.OpenProcess(processAccess, false, uint32(pid))
	}
	if err != nil {
		if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
			return nil, fmt.Errorf("pid %d: %w (run gprof as the process's user, or elevated for another user's process)", pid, attach.ErrPermission)
		}
		return nil, fmt.Errorf("pid %d: %w", pid, attach.ErrNoSuchProcess)
	}
	p.h = h
	if stop, err := windows.CreateEvent(nil, 1, 0, nil); err == nil {
		p.stop, p.waited = stop, make(chan struct{})
		go func() {
			defer close(p.waited)
			ev, err := windows.WaitForMultipleObjects([]windows.Handle{p.h, p.stop}, false, windows.INFINITE)
			if err == nil && ev == windows.WAIT_OBJECT_0 {
				p.gone.Store(true)
			}
		}()
	}
	return p, nil
}

func (p *liveWinProc) close() {
	if p.stop != 0 {
		windows.SetEvent(p.stop)
		<-p.waited
		windows.CloseHandle(p.stop)
	}
	if p.last != 0 {
		windows.CloseHandle(p.last)
	}
	windows.CloseHandle(p.h)
}

// exited reads what the waiting goroutine saw: a wait on the process
// costs a wineserver round trip under Wine (1.6 ms on a loaded machine),
// too much for every tick. (GetExitCodeProcess sometimes answers 0 for a
// live process under Wine.)
func (p *liveWinProc) exited() bool {
	if p.stop != 0 {
		return p.gone.Load()
	}
	ev, err := windows.WaitForSingleObject(p.h, 0)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

// newThreads walks the process's threads from the newest one it has
// seen with NtGetNextThread, which goes in creation order: a single call
// (a round trip under Wine, where a Toolhelp list takes 6 ms and more)
// when no thread is new. The handle of the newest is kept open, which
// keeps its place in the list after it exits. It allocates nothing.
func (p *liveWinProc) newThreads() []uint32 {
	if !p.probe {
		return nil
	}
	ids := p.ids[:0]
	for range cap(ids) {
		var h windows.Handle
		st, _, _ := procNtGetNextThread.Call(uintptr(p.h), uintptr(p.last), windows.THREAD_QUERY_LIMITED_INFORMATION, 0, 0, uintptr(unsafe.Pointer(&h)))
		if st != 0 {
			if uint32(st) != statusNoMoreEntries && p.last == 0 {
				p.probe = false // not implemented, or not allowed
			}
			break
		}
		id, _, _ := procGetThreadId.Call(uintptr(h))
		if p.last != 0 {
			windows.CloseHandle(p.last)
		}
		p.last = h
		if id != 0 {
			ids = append(ids, uint32(id))
		}
	}
	p.ids = ids
	return ids
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

// cpu reads the thread's times. Their exit time tells a thread that
// exited (Windows documents it as undefined until then, so a wait on the
// thread confirms it).
func (t *liveWinThread) cpu() (int64, error) {
	var c, e, k, u windows.Filetime
	r, _, err := procGetThreadTimes.Call(uintptr(t.h), uintptr(unsafe.Pointer(&c)), uintptr(unsafe.Pointer(&e)), uintptr(unsafe.Pointer(&k)), uintptr(unsafe.Pointer(&u)))
	if r == 0 {
		return 0, err
	}
	if e != (windows.Filetime{}) {
		if ev, err := windows.WaitForSingleObject(t.h, 0); err == nil && ev == windows.WAIT_OBJECT_0 {
			return 0, errThreadExited
		}
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

// suspendTarget is one process being recorded; listedAt is when its
// thread list was last asked for.
type suspendTarget struct {
	proc     *liveWinProc
	sampler  *suspendSampler
	launched *winproc.Child
	listedAt int64
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
		s.asyncLists, s.lists = true, make(chan listResult)
		s.argv, s.execd = argv, child != nil
		if child != nil {
			// Its loader has not run yet: no module list names it.
			s.procName = baseName(child.Path())
		}
		if fpOnlyArch {
			s.fpOnly, s.arch = true, suspendwalk.ARM64
		}
		targets = append(targets, &suspendTarget{proc: p, sampler: s, launched: child, listedAt: attach.MonotonicNow()})
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
		tickSuspend(&targets, attach.MonotonicNow(), true, &res)
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
	lastSlow := attach.MonotonicNow()
	for len(targets) > 0 {
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
		now := attach.MonotonicNow()
		slow := now-lastSlow >= int64(suspendSlowEvery)
		if slow {
			lastSlow = now
		}
		tickSuspend(&targets, now, slow, &res)
	}
	return res, nil
}

// tickCounts is what a tick did: the threads it captured, the CPU time
// its samples stand for, its captures that failed and those of threads
// that had not run since their last, and the time it spent capturing
// threads not through their start.
type tickCounts struct {
	captured, failed, unchanged int
	cpu, startWork              time.Duration
}

// tickSuspend samples every target once (at now; slow rereads the
// module lists), drops the ones that are gone, and returns what it did.
func tickSuspend(targets *[]*suspendTarget, now int64, slow bool, res *attach.Result) (n tickCounts) {
	kept := (*targets)[:0]
	for _, t := range *targets {
		every := suspendListEvery
		if !t.proc.probe {
			every = suspendListNoProbe
		}
		list := now-t.listedAt >= int64(every)
		if list {
			t.listedAt = now
		}
		s := t.sampler
		suspends, sampled, failed, unchanged, start := s.suspends, s.sampledCPU, s.failed, s.unchanged, s.startWork
		err := s.tick(list, slow)
		n.captured += s.suspends - suspends
		n.cpu += time.Duration(s.sampledCPU - sampled)
		n.startWork += time.Duration(s.startWork - start)
		n.failed += s.failed - failed
		n.unchanged += s.unchanged - unchanged
		if err == nil {
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
	return n
}
