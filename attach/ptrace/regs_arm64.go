//go:build linux

package ptrace

import (
	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
)

// ptGetRegs reads tid's registers. Stops at syscall returns are not
// recognized on arm64 (that needs orig_x0 from another register set).
func ptGetRegs(tid int, r *attach.Regs) (inSyscall bool, err error) {
	var pr unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &pr); err != nil {
		return false, err
	}
	*r = attach.Regs{IP: pr.Pc, SP: pr.Sp, FP: pr.Regs[29], LR: pr.Regs[30]}
	return false, nil
}
