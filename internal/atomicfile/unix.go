//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

// keepOwner gives f the owner and group of old, so that root writing over
// a user's profile leaves it the user's. It is best effort: only root may
// give a file away.
func keepOwner(f *os.File, old os.FileInfo) {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok || (int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid()) {
		return
	}
	f.Chown(int(st.Uid), int(st.Gid))
}

// canWrite reports whether the device or FIFO at path may be opened for
// writing, without opening it.
func canWrite(path string) error {
	return syscall.Access(path, 2) // W_OK
}
