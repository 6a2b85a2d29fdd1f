package attach

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Memory reads len(p) bytes of a target process's memory at addr: all of
// them, or an error.
type Memory func(addr uint64, p []byte) error

var errShortRead = errors.New("short read of process memory")

// ProcessMemory returns a Memory of process pid, read with
// process_vm_readv (no stop, no file descriptor). Backends hand it to
// Options.Interp.
func ProcessMemory(pid int) Memory {
	return func(addr uint64, p []byte) error {
		if len(p) == 0 {
			return nil
		}
		local := []unix.Iovec{{Base: &p[0]}}
		local[0].SetLen(len(p))
		remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		if err != nil {
			return err
		}
		if n != len(p) {
			return errShortRead
		}
		return nil
	}
}
