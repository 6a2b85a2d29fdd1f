//go:build linux && !amd64 && !arm64

package ptrace

import (
	"fmt"
	"runtime"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/event"
)

func ptGetRegs(tid int, r *event.Regs) (kernelEntry, error) {
	return entryUnknown, fmt.Errorf("ptrace backend: registers of %s are not supported: %w", runtime.GOARCH, attach.ErrUnsupported)
}
