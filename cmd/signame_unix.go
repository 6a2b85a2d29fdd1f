//go:build linux || darwin

package cmd

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// exitSignalName names the signal an exit status of 128+N stands for, as
// recorders report a command a signal killed ("SIGSEGV, segmentation
// fault"), or "" for a status that is no such thing.
func exitSignalName(status int) string {
	if status <= 128 || status > 128+64 {
		return ""
	}
	sig := syscall.Signal(status - 128)
	name := unix.SignalName(sig)
	if name == "" {
		return ""
	}
	return name + ", " + sig.String()
}
