package suspendwalk

import (
	"encoding/binary"

	"github.com/gprof-dev/gprof/event"
)

var le = binary.LittleEndian

// WalkFP appends to out the frames of a thread by following its frame
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
func WalkFP(a Arch, regs event.Regs, stack []byte, base uint64, out []uint64, maxFrames int) []uint64 {
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
		if a == ARM64 {
			next, ret = StripPAC(next), StripPAC(ret)
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

// Arch is the instruction set of a target.
type Arch int

const (
	ARM64 Arch = iota
	AMD64
)

func (a Arch) String() string {
	if a == AMD64 {
		return "x86_64"
	}
	return "arm64"
}

// pacMask keeps the bits of a user-space arm64 address: macOS gives user
// processes a 47-bit address space, so the bits above it are pointer
// authentication codes (or tags) that must go before the address is used.
const pacMask = 1<<47 - 1

// StripPAC removes pointer-authentication bits from an arm64 user address.
func StripPAC(a uint64) uint64 { return a & pacMask }
