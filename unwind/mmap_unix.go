//go:build linux || darwin

package unwind

import (
	"os"
	"syscall"
)

// mapFile maps f read-only. Unwind tables are read sparsely, so mapping
// keeps only the touched pages resident, shared with the page cache.
func mapFile(f *os.File) ([]byte, func() error, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := fi.Size()
	if size <= 0 || size != int64(int(size)) {
		return nil, nil, syscall.EINVAL
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}

// fileID identifies the file at path, following symlinks such as
// /proc/PID/map_files/... to the mapped file itself.
func fileID(path string) (dev, ino uint64, ok bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true
}
