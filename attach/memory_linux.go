package attach

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Memory reads a target process's memory.
type Memory interface {
	// Read reads len(p) bytes at addr: all of them, or an error.
	Read(addr uint64, p []byte) error
	// ReadV reads bufs[i] at addrs[i], all in one system call, and
	// returns how many of them, from the first, it read whole.
	ReadV(addrs []uint64, bufs [][]byte) int
}

var errShortRead = errors.New("short read of process memory")

// ProcessMemory returns a Memory of process pid, read with
// process_vm_readv (no stop, no file descriptor). Backends hand it to
// Options.Interp.
func ProcessMemory(pid int) Memory { return procMemory(pid) }

type procMemory int

func (pid procMemory) Read(addr uint64, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	local := [1]unix.Iovec{{Base: &p[0]}}
	local[0].SetLen(len(p))
	remote := [1]unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMReadv(int(pid), local[:], remote[:], 0)
	if err != nil {
		return err
	}
	if n != len(p) {
		return errShortRead
	}
	return nil
}

func (pid procMemory) ReadV(addrs []uint64, bufs [][]byte) int {
	var local [16]unix.Iovec
	var remote [16]unix.RemoteIovec
	k := min(len(addrs), len(bufs), len(local))
	total := 0
	for i := 0; i < k; i++ {
		if len(bufs[i]) == 0 {
			k = i
			break
		}
		local[i] = unix.Iovec{Base: &bufs[i][0]}
		local[i].SetLen(len(bufs[i]))
		remote[i] = unix.RemoteIovec{Base: uintptr(addrs[i]), Len: len(bufs[i])}
		total += len(bufs[i])
	}
	if k == 0 {
		return 0
	}
	n, err := unix.ProcessVMReadv(int(pid), local[:k], remote[:k], 0)
	if err != nil || n <= 0 {
		return 0
	}
	done := 0
	for i := 0; i < k && n >= len(bufs[i]); i++ {
		n -= len(bufs[i])
		done++
	}
	return done
}
