//go:build !linux

package record

import "os"

// heldPath is the path f was opened by: only Linux reaches an open file
// through /proc/self/fd.
func heldPath(f *os.File) string { return f.Name() }

// vdsoFile: the vdso is Linux's.
func (r *libResolver) vdsoFile() *libFile { return nil }
