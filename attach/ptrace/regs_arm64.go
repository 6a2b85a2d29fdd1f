//go:build linux

package ptrace

import (
	"unsafe"

	"github.com/gprof-dev/gprof/event"
	"golang.org/x/sys/unix"
)

// ptGetRegs reads tid's registers. How the thread entered the kernel is
// not told on arm64 (a system call would need orig_x0, from another
// register set, and interrupts and faults look alike).
func ptGetRegs(tid int, r *event.Regs) (entry kernelEntry, err error) {
	var pr unix.PtraceRegs
	iov := unix.Iovec{Base: (*byte)(unsafe.Pointer(&pr))}
	iov.SetLen(int(unsafe.Sizeof(pr)))
	if err := ptrace(unix.PTRACE_GETREGSET, tid, ntPRStatus, uintptr(unsafe.Pointer(&iov))); err != nil {
		return entryUnknown, err
	}
	*r = event.Regs{IP: pr.Pc, SP: pr.Sp, FP: pr.Regs[29], LR: pr.Regs[30]}
	return entryUnknown, nil
}

// ntPRStatus is NT_PRSTATUS, the general registers' set.
const ntPRStatus = 1
