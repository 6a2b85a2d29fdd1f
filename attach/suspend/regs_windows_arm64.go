package suspend

import "github.com/gprof-dev/gprof/event"

// The arm64 CONTEXT (winnt.h): ContextFlags at 0, X0..X28 from 8, Fp
// (x29) 0xf0, Lr (x30) 0xf8, Sp 0x100, Pc 0x108. arm64 .pdata is not read
// yet: these threads are unwound by their frame-pointer chain.
const (
	contextSize = 0x390
	// intRegsStart and intRegsEnd bound the integer registers and the PC.
	intRegsStart = 0x8
	intRegsEnd   = 0x110
	fpOnlyArch   = true
)

func setContextFlags(ctx []byte) {
	const contextControlInteger = 0x400000 | 0x1 | 0x2 // CONTEXT_ARM64 | CONTROL | INTEGER
	le.PutUint32(ctx[0:], contextControlInteger)
}

func decodeContext(ctx []byte) event.Regs {
	return event.Regs{FP: le.Uint64(ctx[0xf0:]), LR: le.Uint64(ctx[0xf8:]), SP: le.Uint64(ctx[0x100:]), IP: le.Uint64(ctx[0x108:])}
}
