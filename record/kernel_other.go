//go:build !linux

package record

import "github.com/gprof-dev/gprof/format"

// kernelLib: kernel frames come from Linux's perf only, so elsewhere there
// is no kernel library to add.
func kernelLib() (format.Lib, bool) { return format.Lib{}, false }
