package suspend

import "github.com/gprof-dev/gprof/event"

// The x64 CONTEXT (winnt.h): ContextFlags at 0x30, Rsp 0x98, Rbp 0xa0,
// Rip 0xf8.
const (
	contextSize = 1232
	// intRegsStart and intRegsEnd bound the integer registers and the PC.
	intRegsStart = 0x78
	intRegsEnd   = 0x100
	fpOnlyArch   = false
)

func setContextFlags(ctx []byte) {
	const contextControlInteger = 0x100000 | 0x1 | 0x2 // CONTEXT_AMD64 | CONTROL | INTEGER
	le.PutUint32(ctx[0x30:], contextControlInteger)
}

func decodeContext(ctx []byte) event.Regs {
	return event.Regs{SP: le.Uint64(ctx[0x98:]), FP: le.Uint64(ctx[0xa0:]), IP: le.Uint64(ctx[0xf8:])}
}
