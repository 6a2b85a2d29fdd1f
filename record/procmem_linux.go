package record

import (
	"fmt"
	"os"
)

// readProcMem reads a live process's memory at addr.
func readProcMem(pid int, addr uint64, buf []byte) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.ReadAt(buf, int64(addr))
}
