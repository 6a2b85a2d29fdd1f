//go:build linux && (amd64 || arm64)

package ptrace

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// sigaction is the kernel's struct sigaction on amd64 and arm64, as
// rt_sigaction takes it.
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const saNoCldStop = 1 // SA_NOCLDSTOP

func getSigaction(sig unix.Signal) (sigaction, bool) {
	var sa sigaction
	_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa.mask), 0, 0)
	return sa, e == 0
}

func setSigaction(sig unix.Signal, sa sigaction) bool {
	_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&sa)), 0, unsafe.Sizeof(sa.mask), 0, 0)
	return e == 0
}
