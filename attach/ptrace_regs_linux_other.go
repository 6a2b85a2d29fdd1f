//go:build linux && !amd64 && !arm64

package attach

import (
	"fmt"
	"runtime"
)

func ptGetRegs(tid int, r *Regs) (bool, error) {
	return false, fmt.Errorf("ptrace backend: registers of %s are not supported: %w", runtime.GOARCH, ErrUnsupported)
}
