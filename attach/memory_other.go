//go:build !linux

package attach

// Memory reads a target process's memory.
type Memory interface {
	// Read reads len(p) bytes at addr: all of them, or an error.
	Read(addr uint64, p []byte) error
	// ReadV reads bufs[i] at addrs[i], all in one system call, and
	// returns how many of them, from the first, it read whole.
	ReadV(addrs []uint64, bufs [][]byte) int
}

// ProcessMemory returns a Memory of process pid; only Linux has one.
func ProcessMemory(pid int) Memory { return noMemory{} }

type noMemory struct{}

func (noMemory) Read(uint64, []byte) error    { return ErrUnsupported }
func (noMemory) ReadV([]uint64, [][]byte) int { return 0 }
