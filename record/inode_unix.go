//go:build unix

package record

import (
	"os"
	"syscall"
)

func inodeOf(path string) (uint64, bool) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(sys.Ino), true
}

// fileIDOf returns the device (encoded as stat's st_dev, as a mapping's
// Dev is) and inode of the file at path.
func fileIDOf(path string) (dev, ino uint64, ok bool) {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true
}
