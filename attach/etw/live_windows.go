//go:build windows

package etw

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/winproc"
	"github.com/gprof-dev/gprof/etwevent"
	"github.com/gprof-dev/gprof/etwevent/translate"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/objfile"
)

// The ETW backend: a private real-time kernel session (system logger mode)
// with process, thread, image and profile events and stack walks on
// samples. This file only talks to advapi32; what the events mean is
// decided by package etw/translate, which is tested on Linux with a real
// trace's events (and turns ETL files into profiles too). This layer has been cross-compiled and
// reviewed, not run: see docs/windows.md.

var (
	advapi32                 = windows.NewLazySystemDLL("advapi32.dll")
	procStartTraceW          = advapi32.NewProc("StartTraceW")
	procControlTraceW        = advapi32.NewProc("ControlTraceW")
	procOpenTraceW           = advapi32.NewProc("OpenTraceW")
	procProcessTrace         = advapi32.NewProc("ProcessTrace")
	procCloseTrace           = advapi32.NewProc("CloseTrace")
	procTraceSetInformation  = advapi32.NewProc("TraceSetInformation")
	procTraceQueryInfomation = advapi32.NewProc("TraceQueryInformation")
	procQueryAllTracesW      = advapi32.NewProc("QueryAllTracesW")

	kernel32                      = windows.NewLazySystemDLL("kernel32.dll")
	procQueryPerformanceCounter   = kernel32.NewProc("QueryPerformanceCounter")
	procQueryPerformanceFrequency = kernel32.NewProc("QueryPerformanceFrequency")
	procSetConsoleCtrlHandler     = kernel32.NewProc("SetConsoleCtrlHandler")
)

const (
	eventTraceControlStop           = 1
	traceStackTracingInfo           = 3
	traceSampledProfileIntervalInfo = 5
	errWMIInstanceNotFound          = 4201
	invalidProcessTraceHandle       = ^uint64(0)
	// etwSilence is how long a session may deliver nothing before gprof
	// says so: a real kernel session's rundown comes at once.
	etwSilence = 3 * time.Second
)

// etwSession is the one session of this process. The callbacks ETW calls
// are created once (Go never frees them) and reach it through etwCurrent.
type etwSession struct {
	name        string
	guid        etwevent.GUID
	props       []byte
	handle      uint64 // the controller's TRACEHANDLE
	trace       uint64 // the consumer's handle from OpenTraceW
	tr          *translate.Translator
	events      atomic.Int64
	done        chan struct{} // closed when every target has exited
	doneSet     sync.Once
	stopped     sync.Once
	closed      sync.Once
	stopErr     error
	panicV      atomic.Value
	oldInterval uint32
	haveOld     bool
}

var (
	etwCurrent     atomic.Pointer[etwSession]
	etwCallbacks   sync.Once
	etwRecordCB    uintptr
	etwBufferCB    uintptr
	etwCtrlHandler uintptr
)

func etwInitCallbacks() {
	etwCallbacks.Do(func() {
		etwRecordCB = syscall.NewCallback(func(r *eventRecord) uintptr {
			s := etwCurrent.Load()
			if s == nil || r == nil || s.panicV.Load() != nil {
				return 0 // no session, or its translator panicked: the rest is dropped
			}
			defer func() {
				// A panic on ETW's thread would skip Record's
				// deferred stop: keep it for Record to re-raise
				// after the session is stopped.
				if v := recover(); v != nil {
					s.panicV.CompareAndSwap(nil, fmt.Sprint(v))
					s.signalDone()
				}
			}()
			s.events.Add(1)
			var payload []byte
			if r.UserData != nil && r.UserDataLength > 0 {
				payload = unsafe.Slice((*byte)(r.UserData), r.UserDataLength)
			}
			e, cpu := etwEvent(r, payload, true)
			s.tr.Event(&e, cpu)
			if s.tr.Done() {
				s.signalDone()
			}
			return 0
		})
		etwBufferCB = syscall.NewCallback(func(logfile uintptr) uintptr { return 1 })
		etwCtrlHandler = syscall.NewCallback(func(ctrlType uint32) uintptr {
			// Ctrl-C, Ctrl-Break, closing the console, logoff,
			// shutdown: stop the session before Windows ends the
			// process, then let Go's own handler run.
			if s := etwCurrent.Load(); s != nil {
				s.stop()
			}
			return 0
		})
	})
}

func (s *etwSession) signalDone() { s.doneSet.Do(func() { close(s.done) }) }

// stop stops the session; it is safe to call from any path, any number of
// times.
func (s *etwSession) stop() error {
	s.stopped.Do(func() {
		if s.handle != 0 || s.name != "" {
			s.stopErr = controlStop(s.handle, s.name)
		}
		if s.haveOld {
			setProfileInterval(s.oldInterval)
		}
	})
	return s.stopErr
}

// closeTrace closes the consumer's handle, which ends ProcessTrace at once
// (the session's last buffers are lost if it has not returned by then).
func (s *etwSession) closeTrace() {
	s.closed.Do(func() {
		if s.trace != 0 && s.trace != invalidProcessTraceHandle {
			procCloseTrace.Call(uintptr(s.trace))
		}
	})
}

// controlStop stops a session by handle or name.
func controlStop(handle uint64, name string) error {
	props := etwProperties(name, etwevent.GUID{}, 1)
	n, _ := windows.UTF16PtrFromString(name)
	r, _, _ := procControlTraceW.Call(uintptr(handle), uintptr(unsafe.Pointer(n)), uintptr(unsafe.Pointer(&props[0])), eventTraceControlStop)
	if r != 0 && r != errWMIInstanceNotFound {
		return syscall.Errno(r)
	}
	return nil
}

// etwSessionNames lists the ETW sessions running on the machine.
func etwSessionNames() []string {
	const max = 64
	const size = etwPropsSize + 2*1024*2
	bufs := make([][]byte, max)
	ptrs := make([]uintptr, max)
	for i := range bufs {
		b := make([]byte, size)
		*(*uint32)(unsafe.Pointer(&b[0])) = size
		*(*uint32)(unsafe.Pointer(&b[116])) = etwPropsSize          // LoggerNameOffset
		*(*uint32)(unsafe.Pointer(&b[112])) = etwPropsSize + 2*1024 // LogFileNameOffset
		bufs[i], ptrs[i] = b, uintptr(unsafe.Pointer(&b[0]))
	}
	var count uint32
	r, _, _ := procQueryAllTracesW.Call(uintptr(unsafe.Pointer(&ptrs[0])), max, uintptr(unsafe.Pointer(&count)))
	runtime.KeepAlive(bufs)
	if r != 0 && r != uintptr(windows.ERROR_MORE_DATA) {
		return nil
	}
	var names []string
	for i := 0; i < int(count) && i < max; i++ {
		names = append(names, windows.UTF16PtrToString((*uint16)(unsafe.Pointer(&bufs[i][etwPropsSize]))))
	}
	return names
}

// stopStaleSessions stops the sessions gprof runs that were killed before
// they could stop theirs left behind: kernel sessions are system-wide and
// outlive the process that started them.
func stopStaleSessions(notice func(string)) {
	for _, name := range etwSessionNames() {
		if !isStaleETWSession(name, os.Getpid()) {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimPrefix(name, etwSessionPrefix))
		if err == nil && processAlive(pid) {
			continue // another gprof, still recording
		}
		if controlStop(0, name) == nil && notice != nil {
			notice("stopped ETW session " + name + ", left running by an earlier gprof that was killed")
		}
	}
}

func processAlive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err == windows.ERROR_ACCESS_DENIED {
		return true // there, but protected
	}
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	return windows.GetExitCodeProcess(h, &code) == nil && code == 259 // STILL_ACTIVE
}

// enableProfilePrivilege enables SeSystemProfilePrivilege, which setting
// the profile interval and kernel profiling need; an elevated token has it
// disabled.
func enableProfilePrivilege() error {
	var tok windows.Token
	if err := windows.OpenProcessToken(windows.CurrentProcess(), windows.TOKEN_ADJUST_PRIVILEGES|windows.TOKEN_QUERY, &tok); err != nil {
		return err
	}
	defer tok.Close()
	var luid windows.LUID
	name, _ := windows.UTF16PtrFromString("SeSystemProfilePrivilege")
	if err := windows.LookupPrivilegeValue(nil, name, &luid); err != nil {
		return err
	}
	tp := windows.Tokenprivileges{PrivilegeCount: 1}
	tp.Privileges[0] = windows.LUIDAndAttributes{Luid: luid, Attributes: windows.SE_PRIVILEGE_ENABLED}
	if err := windows.AdjustTokenPrivileges(tok, false, &tp, 0, nil, nil); err != nil {
		return err
	}
	// AdjustTokenPrivileges succeeds without the privilege, saying so
	// only in GetLastError.
	if e := windows.GetLastError(); e == windows.ERROR_NOT_ALL_ASSIGNED {
		return e
	}
	return nil
}

// traceProfileInterval is TRACE_PROFILE_INTERVAL.
type traceProfileInterval struct {
	Source   uint32
	Interval uint32 // 100 ns units
}

func setProfileInterval(units uint32) error {
	iv := traceProfileInterval{Interval: units}
	// The session handle must be 0: the interval is system-wide.
	r, _, _ := procTraceSetInformation.Call(0, traceSampledProfileIntervalInfo, uintptr(unsafe.Pointer(&iv)), unsafe.Sizeof(iv))
	if r != 0 {
		return syscall.Errno(r)
	}
	return nil
}

func profileInterval() (uint32, bool) {
	if procTraceQueryInfomation.Find() != nil {
		return 0, false
	}
	iv := traceProfileInterval{}
	var n uint32
	r, _, _ := procTraceQueryInfomation.Call(0, traceSampledProfileIntervalInfo, uintptr(unsafe.Pointer(&iv)), unsafe.Sizeof(iv), uintptr(unsafe.Pointer(&n)))
	return iv.Interval, r == 0 && iv.Interval != 0
}

// classicEventID is CLASSIC_EVENT_ID.
type classicEventID struct {
	EventGUID etwevent.GUID
	Type      uint8
	_         [7]uint8
}

func qpc() (counter, freq int64) {
	procQueryPerformanceCounter.Call(uintptr(unsafe.Pointer(&counter)))
	procQueryPerformanceFrequency.Call(uintptr(unsafe.Pointer(&freq)))
	return counter, freq
}

// dosDevices maps \Device\HarddiskVolumeN to its drive letter, so image
// paths can be opened.
func dosDevices() func(string) string {
	devs := map[string]string{}
	buf := make([]uint16, 1024)
	for c := 'A'; c <= 'Z'; c++ {
		drive := string(c) + ":"
		d, _ := windows.UTF16PtrFromString(drive)
		if n, err := windows.QueryDosDevice(d, &buf[0], uint32(len(buf))); err == nil && n > 0 {
			devs[strings.ToLower(windows.UTF16ToString(buf))] = drive
		}
	}
	return func(p string) string {
		if lp := strings.ToLower(p); strings.HasPrefix(lp, `\device\`) {
			if i := strings.IndexByte(lp[len(`\device\`):], '\\'); i >= 0 {
				dev := lp[:len(`\device\`)+i]
				if drive, ok := devs[dev]; ok {
					return drive + p[len(dev):]
				}
			}
		}
		p = etwevent.NormalizePath(p)
		if strings.HasPrefix(p, `\`) && !strings.HasPrefix(p, `\\`) && !strings.HasPrefix(strings.ToLower(p), `\device\`) {
			p = os.Getenv("SystemDrive") + p
		}
		return p
	}
}

// ETW is Windows's first backend; where it is denied (no administrator
// rights) or delivers nothing (Wine), Auto falls back to suspend.
func init() {
	attach.Register(attach.Driver{Name: attach.ETW, Order: 10, Start: startETW})
}

// startETW runs etwRecord, its errors that mean "use the suspend backend
// instead" marked so for the dispatcher.
func startETW(ctx context.Context, opts attach.Options, h event.Handler) (attach.Result, error) {
	res, err := etwRecord(ctx, opts, h)
	if err != nil && etwUnavailable(err) {
		// It failed before emitting anything (and killed a command it
		// had launched suspended): the dispatcher may try suspend.
		return res, attach.Unavailable(err, "ETW kernel sessions", err.Error())
	}
	return res, err
}

// etwRecord records with a kernel ETW session.
func etwRecord(ctx context.Context, opts attach.Options, h event.Handler) (res attach.Result, err error) {
	res = attach.Result{ExitCode: -1, Backend: "etw", Event: "cpu-clock"}
	notice := opts.Notice
	if notice == nil {
		notice = func(string) {}
	}
	if len(opts.Tids) > 0 {
		return res, errors.New("the ETW backend records whole processes: use --pid, not --tid")
	}
	if opts.Event != "" && opts.Event != "cpu-clock" && opts.Event != "task-clock" {
		notice("ETW samples on the kernel's profile timer: --event " + opts.Event + " is not available, using cpu-clock")
	}
	if err := enableProfilePrivilege(); err != nil {
		return res, fmt.Errorf("%w: the ETW backend needs SeSystemProfilePrivilege: run gprof from an elevated (Administrator) prompt (%v)", attach.ErrPermission, err)
	}
	stopStaleSessions(notice)

	units, msg := etwInterval(opts.Interval)
	if msg != "" {
		notice(msg)
	}
	s := &etwSession{name: etwSessionName(os.Getpid()), guid: newSessionGUID(), done: make(chan struct{})}
	if old, ok := profileInterval(); ok {
		s.oldInterval, s.haveOld = old, true
	}
	if err := setProfileInterval(units); err != nil {
		return res, fmt.Errorf("%w: cannot set the sampling interval (TraceSetInformation: %v): run gprof elevated", attach.ErrPermission, err)
	}
	// From here on every path stops the session and restores the
	// interval: the deferred stop, the console handler, and a panic in
	// the callback (re-raised below after the stop).
	defer s.stop()
	etwInitCallbacks()
	etwCurrent.Store(s)
	defer etwCurrent.Store(nil)
	procSetConsoleCtrlHandler.Call(etwCtrlHandler, 1)
	defer procSetConsoleCtrlHandler.Call(etwCtrlHandler, 0)

	var child *winproc.Child
	var targets []int
	if len(opts.Command) > 0 {
		if child, err = winproc.LaunchSuspended(opts.Command, opts.Env, opts.Dir); err != nil {
			return res, err
		}
		// Closing the job kills the command if it still runs: on
		// every path out, as on Linux a launched command does not
		// outlive gprof.
		defer child.Close()
		targets = []int{child.Pid()}
	} else {
		for _, p := range opts.Pids {
			if !processAlive(p) {
				return res, fmt.Errorf("%w: %d", attach.ErrNoSuchProcess, p)
			}
		}
		targets = opts.Pids
	}

	counter0, freq := qpc()
	mono0 := event.Now()
	toNS := func(t int64) int64 {
		d := t - counter0
		return mono0 + d/freq*1e9 + d%freq*1e9/freq
	}
	s.tr = translate.New(h, translate.Options{
		Targets: targets, ToNS: toNS, Interval: int64(units) * 100, Kernel: opts.Kernel,
		Path: dosDevices(),
		Identify: func(im *etwevent.Image, path string) *objfile.Identity {
			return translate.DiskIdentity(path, im.Size, im.TimeDateStamp)
		},
		MaxWait: freq, // a second: a stack's user part comes long before
	})

	s.props = etwProperties(s.name, s.guid, runtime.NumCPU())
	name, _ := windows.UTF16PtrFromString(s.name)
	r, _, _ := procStartTraceW.Call(uintptr(unsafe.Pointer(&s.handle)), uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(&s.props[0])))
	if r == uintptr(windows.ERROR_ALREADY_EXISTS) {
		controlStop(0, s.name)
		s.props = etwProperties(s.name, s.guid, runtime.NumCPU())
		r, _, _ = procStartTraceW.Call(uintptr(unsafe.Pointer(&s.handle)), uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(&s.props[0])))
	}
	switch r {
	case 0:
	case uintptr(windows.ERROR_ACCESS_DENIED):
		return res, fmt.Errorf("%w: cannot start a kernel ETW session: run gprof from an elevated (Administrator) prompt", attach.ErrPermission)
	default:
		s.name = "" // nothing to stop
		return res, fmt.Errorf("cannot start a kernel ETW session (StartTraceW: %v); on Windows 7 and older, stop other kernel sessions (xperf -stop) or use --backend suspend", syscall.Errno(r))
	}
	// Stack walks on samples.
	ids := []classicEventID{{EventGUID: etwevent.PerfInfoGUID, Type: 46}}
	if r, _, _ := procTraceSetInformation.Call(uintptr(s.handle), traceStackTracingInfo, uintptr(unsafe.Pointer(&ids[0])), unsafe.Sizeof(ids[0])*uintptr(len(ids))); r != 0 {
		return res, fmt.Errorf("cannot ask the ETW session for stacks (TraceSetInformation: %v)", syscall.Errno(r))
	}

	lf := eventTraceLogfile{
		LoggerName:          name,
		ProcessTraceMode:    processTraceModeRealTime | processTraceModeEventRecord | processTraceModeRawTimestamp,
		BufferCallback:      etwBufferCB,
		EventRecordCallback: etwRecordCB,
	}
	th, _, _ := procOpenTraceW.Call(uintptr(unsafe.Pointer(&lf)))
	s.trace = uint64(th)
	if s.trace == invalidProcessTraceHandle {
		return res, fmt.Errorf("cannot open the ETW session to read it (OpenTraceW: %v)", windows.GetLastError())
	}
	processed := make(chan error, 1)
	go func() {
		// ProcessTrace blocks, calling the callback on this thread,
		// until the session stops.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		h := s.trace
		r, _, _ := procProcessTrace.Call(uintptr(unsafe.Pointer(&h)), 1, 0, 0)
		if r != 0 && r != uintptr(windows.ERROR_CANCELLED) {
			processed <- fmt.Errorf("ProcessTrace: %v", syscall.Errno(r))
			return
		}
		processed <- nil
	}()
	// finish stops the session and waits for ProcessTrace to deliver the
	// last buffers and return, so no event reaches h after Record
	// returns, whatever the way out.
	var finishOnce sync.Once
	var finishErr error
	finish := func() error {
		finishOnce.Do(func() {
			if err := s.stop(); err != nil {
				finishErr = fmt.Errorf("stopping the ETW session: %w", err)
			}
			select {
			case err := <-processed:
				finishErr = errors.Join(finishErr, err)
			case <-time.After(5 * time.Second):
				s.closeTrace()
				finishErr = errors.Join(finishErr, <-processed)
			}
			s.closeTrace()
		})
		return finishErr
	}
	defer finish()

	// The rundown names what already runs; then the command may start.
	deadline := time.Now().Add(etwSilence)
	for s.events.Load() == 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if s.events.Load() == 0 {
		if child != nil {
			child.Kill()
		}
		finish()
		if ctx.Err() != nil {
			return res, nil
		}
		return res, fmt.Errorf("%w in 3s (Wine's StartTraceW succeeds and delivers nothing): on Windows, check that no security tool blocks kernel tracing, or use --backend suspend", ErrNoEvents)
	}
	if child != nil {
		if err := child.Resume(); err != nil {
			return res, fmt.Errorf("cannot resume the command: %w", err)
		}
	}

	select {
	case <-ctx.Done():
	case <-s.done:
		// Let the last buffers of the exited targets arrive (the
		// session flushes every second).
		time.Sleep(1100 * time.Millisecond)
	case err := <-processed:
		processed <- err // the session ended on its own; finish reads it
	}
	perr := finish()
	s.tr.Flush()
	if v := s.panicV.Load(); v != nil {
		panic(v)
	}
	res.Lost = s.tr.Lost()
	if child != nil {
		if child.Exited() {
			res.ExitCode = child.Wait()
		} else if ctx.Err() != nil {
			child.Kill()
		}
	}
	if s.tr.Samples() == 0 && perr == nil {
		notice("the ETW session delivered events but no samples of the targets")
	}
	return res, perr
}
