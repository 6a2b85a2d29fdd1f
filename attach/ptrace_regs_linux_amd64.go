//go:build linux

package attach

import "golang.org/x/sys/unix"

func ptGetRegs(tid int, r *Regs) error {
	var pr unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &pr); err != nil {
		return err
	}
	*r = Regs{IP: pr.Rip, SP: pr.Rsp, FP: pr.Rbp}
	return nil
}
