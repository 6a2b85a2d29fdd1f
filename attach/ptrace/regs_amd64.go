//go:build linux

package ptrace

import (
	"unsafe"

	"github.com/gprof-dev/gprof/event"
	"golang.org/x/sys/unix"
)

// ptGetRegs reads tid's registers, and how the thread last entered the
// kernel, which is where a stopped thread stops. orig_rax tells: -1 after
// an interrupt (a timer, another CPU's wake-up call), the error code after
// an exception (a page fault), the system call's number after a system
// call, where rcx also equals rip because the syscall instruction saved
// the return address there (an interrupt or fault essentially never
// leaves them equal).
func ptGetRegs(tid int, r *event.Regs) (entry kernelEntry, err error) {
	var pr unix.PtraceRegs
	if err := ptrace(unix.PTRACE_GETREGS, tid, 0, uintptr(unsafe.Pointer(&pr))); err != nil {
		return entryUnknown, err
	}
	*r = event.Regs{IP: pr.Rip, SP: pr.Rsp, FP: pr.Rbp, BX: pr.Rbx}
	switch {
	case int64(pr.Orig_rax) < 0:
		return entryInterrupt, nil
	case pr.Orig_rax < 4096 && pr.Rcx == pr.Rip:
		return entrySyscall, nil
	}
	return entryException, nil
}
