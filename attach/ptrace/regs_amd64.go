//go:build linux

package ptrace

import (
	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
)

// ptGetRegs reads tid's registers. inSyscall reports a stop on the way
// out of a system call: orig_rax holds a syscall number, and rcx equals
// rip because the syscall instruction saved the return address there (an
// interrupt essentially never leaves them equal).
func ptGetRegs(tid int, r *attach.Regs) (inSyscall bool, err error) {
	var pr unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &pr); err != nil {
		return false, err
	}
	*r = attach.Regs{IP: pr.Rip, SP: pr.Rsp, FP: pr.Rbp, BX: pr.Rbx}
	return int64(pr.Orig_rax) >= 0 && pr.Orig_rax < 4096 && pr.Rcx == pr.Rip, nil
}
