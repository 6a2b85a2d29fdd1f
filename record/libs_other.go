//go:build !linux

package record

// vdsoFile: the vdso is Linux's.
func (r *libResolver) vdsoFile() *libFile { return nil }
