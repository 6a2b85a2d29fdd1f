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
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/suspendwalk"
	"github.com/gprof-dev/gprof/attach/internal/winproc"
	"github.com/gprof-dev/gprof/event"
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
	// suspendMaxSleep bounds one sleep, so that a cancelled recording
	// ends soon at low rates.
	suspendMaxSleep = 20 * time.Millisecond
	// suspendProbeMax bounds the new threads one newThreads call returns
	// (the next call goes on).
	suspendProbeMax = 64

	threadAccess  = windows.THREAD_SUSPEND_RESUME | windows.THREAD_GET_CONTEXT | windows.THREAD_QUERY_INFORMATION | windows.SYNCHRONIZE
	processAccess = windows.PROCESS_QUERY_LIMITED_INFORMATION | windows.PROCESS_VM_READ | windows.SYNCHRONIZE
	// NtGetNextThread wants PROCESS_QUERY_INFORMATION.
	probeAccess = windows.PROCESS_QUERY_INFORMATION

	threadPriorityTimeCritical = 15
	statusNoMoreEntries        = 0x8000001A
	// createWaitableTimerHighResolution asks CreateWaitableTimerExW for a
	// timer that does not round to the system's clock tick (Windows 10
	// 1803 and later).
	createWaitableTimerHighResolution = 0x2
	timerAllAccess                    = 0x1F0003
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
	procSetThreadPrio    = kernel32.NewProc("SetThreadPriority")
	procGetThreadPrio    = kernel32.NewProc("GetThreadPriority")
	procCreateTimerEx    = kernel32.NewProc("CreateWaitableTimerExW")
	procSetTimer         = kernel32.NewProc("SetWaitableTimer")
	procNtDelayExecution = ntdll.NewProc("NtDelayExecution")
	procWineVersion      = ntdll.NewProc("wine_get_version")
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

func (t *liveWinThread) context() (event.Regs, uint64, error) {
	setContextFlags(t.ctx)
	r, _, err := procGetThreadContext.Call(uintptr(t.h), uintptr(unsafe.Pointer(&t.ctx[0])))
	if r == 0 {
		return event.Regs{}, 0, fmt.Errorf("GetThreadContext: %w", err)
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
func loadModule(path string) (*unwind.PEImage, *objfile.Identity) {
	f, err := openModule(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	img := new(objfile.Identity)
	*img = f.Identity()
	// The recorder names the library's debug path by the module's own
	// path, as this backend always has, not by the PDB's.
	img.DebugPath = ""
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
func recordSuspend(ctx context.Context, opts attach.Options, h event.Handler) (attach.Result, error) {
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
		s := newSuspendSampler(p, pid, stackSize, func(e event.Event) { h(e) }, event.Now)
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
		targets = append(targets, &suspendTarget{proc: p, sampler: s, launched: child, listedAt: event.Now()})
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
		tickSuspend(&targets, event.Now(), true, &res)
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
	return sampleSuspend(ctx, &targets, interval, notice, res)
}

// sampleSuspend ticks until the targets are gone or ctx is done. The
// ticks run on a thread of their own at THREAD_PRIORITY_TIME_CRITICAL
// (the top of the normal range; Wine 8 keeps it to itself), and sleep on
// a high-resolution timer: Go's timers on Windows use a waitable timer,
// which under Wine goes through wineserver and, with the targets busy on
// every CPU, wakes up late (2 ms ticks stretched to 12 ms); under Wine
// NtDelayExecution sleeps in the kernel instead. Each tick comes at a
// deadline from the previous one, so that its work does not stretch the
// interval, at the pace the pacer sets.
func sampleSuspend(ctx context.Context, targets *[]*suspendTarget, interval time.Duration, notice func(string), res attach.Result) (out attach.Result, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer raisePriority()()
	wine := wineVersion()
	sl := newSleeper(wine != "")
	defer sl.close()
	pc := newPacer(interval)
	var failed, unchanged int
	cpu0, wall0 := processCPU(), event.Now()
	defer func() {
		out.Interval = pc.interval()
		out.Stats = suspendStats(pc, wine)
		out.Stats["suspend_captures"] = fmt.Sprintf("%d failed, %d of threads that had not run since", failed, unchanged)
		if cpu0 >= 0 {
			own, wall := processCPU()-cpu0, time.Duration(event.Now()-wall0)
			out.Stats["suspend_gprof_cpu"] = fmt.Sprintf("%v (%.0f%% of %v)", own.Round(time.Millisecond), 100*own.Seconds()/wall.Seconds(), wall.Round(time.Millisecond))
		}
		if wine != "" {
			out.RateAdvice = "under Wine each call that samples a thread is a round trip to wineserver, which waits for a CPU as the targets do: lower the rate (-r), or leave a CPU free"
		} else {
			out.RateAdvice = "lower the rate (-r), or run gprof elevated for the ETW backend"
		}
		if line := pc.notice(wine != "", costWhy(wine)); line != "" {
			notice(line)
		}
		if line := failedNotice(failed, pc.threads, wine != ""); line != "" {
			notice(line)
		}
	}()
	lastSlow := event.Now()
	deadline := event.Now() + int64(pc.next())
	for len(*targets) > 0 {
		if ctx.Err() != nil {
			res.End = event.Now()
			for _, t := range *targets {
				if t.launched != nil {
					res.ExitCode = t.launched.Stop(suspendStopGrace)
				}
			}
			return res, nil
		}
		start := event.Now()
		if d := time.Duration(deadline - start); d > 0 {
			sl.sleep(min(d, suspendMaxSleep))
			continue
		}
		slow := start-lastSlow >= int64(suspendSlowEvery)
		if slow {
			lastSlow = start
		}
		n := tickSuspend(targets, start, slow, &res)
		failed, unchanged = failed+n.failed, unchanged+n.unchanged
		end := event.Now()
		pc.tick(start, time.Duration(end-start)-n.startWork, n.captured, n.cpu)
		deadline += int64(pc.next())
		if deadline < end {
			pc.late++
			deadline = end
		}
	}
	return res, nil
}

func costWhy(wine string) string {
	if wine != "" {
		return "round trips to wineserver"
	}
	return "system calls"
}

// suspendStats is what the profile records of the pace.
func suspendStats(pc *pacer, wine string) map[string]string {
	host := "windows"
	if wine != "" {
		host = "wine " + wine
	}
	return map[string]string{
		"suspend_interval": fmt.Sprintf("%v (asked %v, longest %v; ticks held to %.0f%% of the time, on %s)", pc.interval().Round(10*time.Microsecond), pc.asked, pc.longest, 100*suspendWorkShare, host),
		"suspend_tick_us":  pc.hist.String(),
		"suspend_ticks":    fmt.Sprintf("%d (%d late), %d threads captured, %dµs each", pc.n, pc.late, pc.threads, pc.perThread().Microseconds()),
	}
}

// processCPU returns gprof's CPU time, -1 if unknown.
func processCPU() time.Duration {
	var c, e, k, u windows.Filetime
	if windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &k, &u) != nil {
		return -1
	}
	ft := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ft(k) + ft(u)) * 100)
}

// wineVersion returns Wine's version when gprof runs under Wine (its
// ntdll exports wine_get_version), "" on Windows.
func wineVersion() string {
	if procWineVersion.Find() != nil {
		return ""
	}
	r, _, _ := procWineVersion.Call()
	if r == 0 {
		return "?"
	}
	return windows.BytePtrToString(*(**byte)(unsafe.Pointer(&r)))
}

// raisePriority sets the calling thread's priority to time critical and
// returns what restores it.
func raisePriority() (restore func()) {
	self := windows.CurrentThread()
	old, _, _ := procGetThreadPrio.Call(uintptr(self))
	if int32(old) == 0x7fffffff { // THREAD_PRIORITY_ERROR_RETURN
		return func() {}
	}
	if r, _, _ := procSetThreadPrio.Call(uintptr(self), threadPriorityTimeCritical); r == 0 {
		return func() {}
	}
	return func() { procSetThreadPrio.Call(uintptr(self), old) }
}

// sleeper sleeps the calling thread.
type sleeper struct {
	wine  bool
	timer windows.Handle // high-resolution waitable timer; 0 if none
}

func newSleeper(wine bool) *sleeper {
	sl := &sleeper{wine: wine && procNtDelayExecution.Find() == nil}
	if !sl.wine && procCreateTimerEx.Find() == nil {
		h, _, _ := procCreateTimerEx.Call(0, 0, createWaitableTimerHighResolution, timerAllAccess)
		sl.timer = windows.Handle(h)
	}
	return sl
}

// sleep sleeps d: under Wine with NtDelayExecution (not alertable, it
// sleeps on the Unix side, with no wineserver round trip; on Windows its
// resolution is the system's clock tick, 15.6 ms by default); on Windows
// on a high-resolution waitable timer, which Go's own timers use too;
// without either (Windows before 10 1803), with time.Sleep.
func (sl *sleeper) sleep(d time.Duration) {
	due := -int64(d / 100) // relative, in 100 ns units
	if due == 0 {
		due = -1
	}
	switch {
	case sl.wine:
		procNtDelayExecution.Call(0, uintptr(unsafe.Pointer(&due)))
	case sl.timer != 0:
		if r, _, _ := procSetTimer.Call(uintptr(sl.timer), uintptr(unsafe.Pointer(&due)), 0, 0, 0, 0); r != 0 {
			windows.WaitForSingleObject(sl.timer, windows.INFINITE)
			return
		}
		time.Sleep(d)
	default:
		time.Sleep(d)
	}
}

func (sl *sleeper) close() {
	if sl.timer != 0 {
		windows.CloseHandle(sl.timer)
	}
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
