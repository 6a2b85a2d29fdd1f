//go:build linux

package ptrace

import (
	"github.com/gprof-dev/gprof/event"
	"golang.org/x/sys/unix"
)

// ptGetRegs reads tid's registers. How the thread entered the kernel is
// not told on arm64 (a system call would need orig_x0, from another
// register set, and interrupts and faults look alike).
func ptGetRegs(tid int, r *event.Regs) (entry kernelEntry, err error) {
	var pr unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &pr); err != nil {
		return entryUnknown, err
	}
	*r = event.Regs{IP: pr.Pc, SP: pr.Sp, FP: pr.Regs[29], LR: pr.Regs[30]}
	return entryUnknown, nil
}
