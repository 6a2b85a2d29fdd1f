//go:build linux

package attach

import "golang.org/x/sys/unix"

func ptGetRegs(tid int, r *Regs) error {
	var pr unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &pr); err != nil {
		return err
	}
	*r = Regs{IP: pr.Pc, SP: pr.Sp, FP: pr.Regs[29], LR: pr.Regs[30]}
	return nil
}
