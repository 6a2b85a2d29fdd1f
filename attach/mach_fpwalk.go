package attach

// walkFP appends to out the frames of a thread by following its frame
// pointer chain through stack, a copy of the thread's stack memory that
// starts at address base: first regs.IP, then the return address of each
// frame record. Apple's ABIs keep frame pointers (arm64 requires x29 to
// address a valid frame record; clang keeps rbp on x86_64), so this is
// the macOS unwinder. A frame record is two words, the caller's frame
// pointer and the return address; the chain must move up the stack, and
// ends where it leaves the copy, reaches a null frame pointer or return
// address, or after maxFrames frames.
//
// Not recovered, for want of __unwind_info: the caller of an arm64 leaf
// function that keeps its return address in lr without making a frame
// record, and the caller of a function sampled before its prologue has
// pushed its frame.
func walkFP(a machArch, regs Regs, stack []byte, base uint64, out []uint64, maxFrames int) []uint64 {
	n := len(out)
	out = append(out, regs.IP)
	fp := regs.FP
	end := base + uint64(len(stack))
	for len(out)-n < maxFrames {
		if fp < base || fp+16 > end || fp%8 != 0 {
			break
		}
		off := fp - base
		next := le.Uint64(stack[off:])
		ret := le.Uint64(stack[off+8:])
		if a == machARM64 {
			next, ret = stripPAC(next), stripPAC(ret)
		}
		if ret == 0 {
			break
		}
		out = append(out, ret)
		if next <= fp {
			break
		}
		fp = next
	}
	return out
}
