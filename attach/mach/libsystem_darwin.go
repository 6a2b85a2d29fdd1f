//go:build darwin

package mach

// The live Mach calls, made without cgo through
// github.com/ebitengine/purego: libSystem is opened with dlopen and each
// function is bound once. purego was chosen over x/sys-style libc
// trampolines because the trampolines need an assembly file per
// architecture plus linknames into package syscall (which the Go linker
// increasingly restricts), while purego binds a C function to a Go
// function variable in one line and is tier-1 on darwin/amd64 and
// darwin/arm64 with CGO_ENABLED=0. Everything above these calls (struct
// layouts, the image list, the sampler, the frame-pointer walk) is in
// files without build tags and tested on every OS.

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/gprof-dev/gprof/attach/internal/suspendwalk"
)

const libSystem = "/usr/lib/libSystem.B.dylib"

// kern_return_t values gprof tells apart.
const (
	kernSuccess         = 0
	kernInvalidArgument = 4
	kernTerminated      = 37
	machSendInvalidDest = 0x10000003
)

var mach struct {
	once sync.Once
	err  error
	self uint32 // mach_task_self_

	taskForPid          func(self uint32, pid int32, task *uint32) int32
	taskReadForPid      func(self uint32, pid int32, task *uint32) int32 // nil before macOS 11
	taskThreads         func(task uint32, list **uint32, count *uint32) int32
	taskInfo            func(task uint32, flavor uint32, info unsafe.Pointer, count *uint32) int32
	machVMDeallocate    func(task uint32, addr uint64, size uint64) int32
	machPortDeallocate  func(task uint32, name uint32) int32
	threadSuspend       func(thread uint32) int32
	threadResume        func(thread uint32) int32
	threadGetState      func(thread uint32, flavor uint32, state unsafe.Pointer, count *uint32) int32
	threadInfo          func(thread uint32, flavor uint32, info unsafe.Pointer, count *uint32) int32
	machVMReadOverwrite func(task uint32, addr uint64, size uint64, data unsafe.Pointer, outSize *uint64) int32
	machErrorString     func(kr int32) string
	csops               func(pid int32, ops uint32, buf unsafe.Pointer, size uintptr) int32

	posixSpawn                    func(pid *int32, path *byte, fileActions *uintptr, attr *uintptr, argv **byte, envp **byte) int32
	posixSpawnattrInit            func(attr *uintptr) int32
	posixSpawnattrSetflags        func(attr *uintptr, flags int16) int32
	posixSpawnattrDestroy         func(attr *uintptr) int32
	posixSpawnFileActionsInit     func(fa *uintptr) int32
	posixSpawnFileActionsAddchdir func(fa *uintptr, dir *byte) int32
	posixSpawnFileActionsDestroy  func(fa *uintptr) int32
}

// loadMach binds the functions gprof uses, once.
func loadMach() error {
	mach.once.Do(func() {
		lib, err := purego.Dlopen(libSystem, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			mach.err = fmt.Errorf("opening %s: %v", libSystem, err)
			return
		}
		self, err := purego.Dlsym(lib, "mach_task_self_")
		if err != nil {
			mach.err = fmt.Errorf("mach_task_self_: %v", err)
			return
		}
		// self is the address of the variable mach_task_self_ (a port
		// name, not a function), in libSystem's data, not Go's heap.
		mach.self = **(**uint32)(unsafe.Pointer(&self))
		bind := func(fn any, name string) {
			if mach.err != nil {
				return
			}
			sym, err := purego.Dlsym(lib, name)
			if err != nil {
				mach.err = fmt.Errorf("%s: %v", name, err)
				return
			}
			purego.RegisterFunc(fn, sym)
		}
		bind(&mach.taskForPid, "task_for_pid")
		bind(&mach.taskThreads, "task_threads")
		bind(&mach.taskInfo, "task_info")
		bind(&mach.machVMDeallocate, "mach_vm_deallocate")
		bind(&mach.machPortDeallocate, "mach_port_deallocate")
		bind(&mach.threadSuspend, "thread_suspend")
		bind(&mach.threadResume, "thread_resume")
		bind(&mach.threadGetState, "thread_get_state")
		bind(&mach.threadInfo, "thread_info")
		bind(&mach.machVMReadOverwrite, "mach_vm_read_overwrite")
		bind(&mach.machErrorString, "mach_error_string")
		bind(&mach.csops, "csops")
		bind(&mach.posixSpawn, "posix_spawn")
		bind(&mach.posixSpawnattrInit, "posix_spawnattr_init")
		bind(&mach.posixSpawnattrSetflags, "posix_spawnattr_setflags")
		bind(&mach.posixSpawnattrDestroy, "posix_spawnattr_destroy")
		bind(&mach.posixSpawnFileActionsInit, "posix_spawn_file_actions_init")
		bind(&mach.posixSpawnFileActionsAddchdir, "posix_spawn_file_actions_addchdir_np")
		bind(&mach.posixSpawnFileActionsDestroy, "posix_spawn_file_actions_destroy")
		if sym, err := purego.Dlsym(lib, "task_read_for_pid"); err == nil {
			purego.RegisterFunc(&mach.taskReadForPid, sym)
		}
	})
	return mach.err
}

// machError is a failed Mach call.
type machError struct {
	call string
	kr   int32
}

func (e *machError) Error() string {
	msg := ""
	if mach.machErrorString != nil {
		msg = mach.machErrorString(e.kr)
	}
	return fmt.Sprintf("%s: %s (kern_return %d)", e.call, msg, e.kr)
}

func krErr(call string, kr int32) error {
	if kr == kernSuccess {
		return nil
	}
	return &machError{call, kr}
}

// darwinTask is a target task reached through a task port.
type darwinTask struct {
	port uint32 // control port (task_for_pid)
}

func (t *darwinTask) threads() ([]uint32, error) {
	var list *uint32
	var n uint32
	kr := mach.taskThreads(t.port, &list, &n)
	switch kr {
	case kernSuccess:
	case machSendInvalidDest, kernInvalidArgument, kernTerminated:
		return nil, suspendwalk.ErrTaskGone
	default:
		return nil, krErr("task_threads", kr)
	}
	if n == 0 || list == nil {
		return nil, nil
	}
	// The array is memory the kernel allocated in gprof's address space:
	// copy the port names out and give it back.
	ports := append([]uint32(nil), unsafe.Slice(list, n)...)
	mach.machVMDeallocate(mach.self, uint64(uintptr(unsafe.Pointer(list))), uint64(n)*4)
	return ports, nil
}

func (t *darwinTask) deallocate(port uint32) { mach.machPortDeallocate(mach.self, port) }

func (t *darwinTask) suspend(thread uint32) error {
	return krErr("thread_suspend", mach.threadSuspend(thread))
}

func (t *darwinTask) resume(thread uint32) error {
	return krErr("thread_resume", mach.threadResume(thread))
}

func (t *darwinTask) state(thread, flavor uint32, buf []byte) error {
	count := uint32(len(buf) / 4)
	return krErr("thread_get_state", mach.threadGetState(thread, flavor, unsafe.Pointer(&buf[0]), &count))
}

func (t *darwinTask) info(thread, flavor uint32, buf []byte) error {
	count := uint32(len(buf) / 4)
	return krErr("thread_info", mach.threadInfo(thread, flavor, unsafe.Pointer(&buf[0]), &count))
}

func (t *darwinTask) read(addr uint64, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	var got uint64
	kr := mach.machVMReadOverwrite(t.port, addr, uint64(len(buf)), unsafe.Pointer(&buf[0]), &got)
	if err := krErr("mach_vm_read_overwrite", kr); err != nil {
		return err
	}
	if got != uint64(len(buf)) {
		return fmt.Errorf("mach_vm_read_overwrite: read %d of %d bytes", got, len(buf))
	}
	return nil
}

// dyldInfoAddr returns the address of the task's dyld_all_image_infos.
func (t *darwinTask) dyldInfoAddr() (uint64, error) {
	var b [taskDyldInfoCount * 4]byte
	count := uint32(taskDyldInfoCount)
	if err := krErr("task_info(TASK_DYLD_INFO)", mach.taskInfo(t.port, taskDyldInfo, unsafe.Pointer(&b[0]), &count)); err != nil {
		return 0, err
	}
	addr, _, format, err := decodeTaskDyldInfo(b[:])
	if err != nil {
		return 0, err
	}
	if format != 1 { // TASK_DYLD_ALL_IMAGE_INFO_64
		return 0, fmt.Errorf("the target is not a 64-bit process (dyld info format %d)", format)
	}
	return addr, nil
}
