//go:build unix

package cmd

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openInherited returns inherited descriptor fd, checked open for how
// ("read" or "write"). A FIFO or pipe to read from is opened afresh
// through /dev/fd, read and write: a description of gprof's own, so
// that it can be made non-blocking (and its reader stopped at the end)
// without touching the caller's, and so that the harness closing its end
// is no end of file, as with fifo:.
func openInherited(fd int, how string) (*os.File, error) {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, err
	}
	mode := fl & unix.O_ACCMODE
	if how == "read" && mode == unix.O_WRONLY || how == "write" && mode == unix.O_RDONLY {
		return nil, fmt.Errorf("open for %s only", map[bool]string{true: "writing", false: "reading"}[mode == unix.O_WRONLY])
	}
	name := fmt.Sprintf("/dev/fd/%d", fd)
	if how == "read" {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
			if f, err := os.OpenFile(name, os.O_RDWR, 0); err == nil {
				return f, nil
			}
		}
	}
	return os.NewFile(uintptr(fd), name), nil
}
