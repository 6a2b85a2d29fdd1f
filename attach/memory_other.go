//go:build !linux

package attach

// Memory reads len(p) bytes of a target process's memory at addr: all of
// them, or an error.
type Memory func(addr uint64, p []byte) error

// ProcessMemory returns a Memory of process pid; only Linux has one.
func ProcessMemory(pid int) Memory {
	return func(uint64, []byte) error { return ErrUnsupported }
}
