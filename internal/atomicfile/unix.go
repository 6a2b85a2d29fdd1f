//go:build unix

package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
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

// replaceable reports whether old, in the directory of real, may be
// renamed over: in a sticky directory such as /tmp only its owner (or the
// directory's, or root) may, which creating a file there does not show.
func replaceable(real string, old os.FileInfo) error {
	euid := os.Geteuid()
	if euid == 0 {
		return nil
	}
	dir := filepath.Dir(real)
	dst, err := os.Stat(dir)
	if err != nil || dst.Mode()&os.ModeSticky == 0 {
		return nil
	}
	ost, ok1 := old.Sys().(*syscall.Stat_t)
	dsys, ok2 := dst.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 || int(ost.Uid) == euid || int(dsys.Uid) == euid {
		return nil
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return reason{"it belongs to another user, and only its owner may replace it in " + dir + " (a sticky directory)", fs.ErrPermission}
}
