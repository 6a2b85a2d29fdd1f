package perfrecord

import "math/bits"

// RegsLayout says where the registers an unwinder needs sit in a sample's
// REGS_USER array, which holds the registers of the attr's
// sample_regs_user mask in ascending bit order.
type RegsLayout struct {
	Mask uint64
	N    int // registers in the array
	// Indexes into the array; -1 when the mask lacks the register (LR
	// outside arm64, BX outside x86-64).
	IP, SP, FP, LR, BX int
	// Callee, when NCallee > 0, is the index of the first of NCallee more
	// registers for event.Sample.CalleeRegs (x86-64's r12-r15, which the
	// live backend asks for where a Python stack is read late).
	Callee, NCallee int
}

// UserRegs returns the layout of mask's registers on arch, named as Go
// (amd64, arm64) or perf.data's uname (x86_64, aarch64) name it. Any other
// arch is read as x86-64, as perf.data files that do not say which.
func UserRegs(arch string, mask uint64) RegsLayout {
	l := RegsLayout{Mask: mask, N: bits.OnesCount64(mask), LR: -1, BX: -1}
	switch arch {
	case "arm64", "aarch64":
		l.IP, l.SP, l.FP, l.LR = l.Index(RegARM64PC), l.Index(RegARM64SP), l.Index(RegARM64X29), l.Index(RegARM64LR)
	default:
		l.IP, l.SP, l.FP, l.BX = l.Index(RegX86IP), l.Index(RegX86SP), l.Index(RegX86BP), l.Index(RegX86BX)
	}
	return l
}

// Index returns where register reg (its bit in the mask) sits in the
// array, or -1 when the mask lacks it.
func (l RegsLayout) Index(reg int) int {
	if reg < 0 || reg >= 64 || l.Mask&(1<<reg) == 0 {
		return -1
	}
	return bits.OnesCount64(l.Mask & (1<<reg - 1))
}
