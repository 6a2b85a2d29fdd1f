//go:build !linux

package record

import "github.com/gprof-dev/gprof/profile"

// kernelLib: kernel frames come from Linux's perf only, so elsewhere there
// is no kernel library to add.
func kernelLib() (profile.Lib, bool) { return profile.Lib{}, false }
