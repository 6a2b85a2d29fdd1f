//go:build unix

package cmd

import (
	"os"
	"syscall"
)

// newProcessGroup puts a command in a process group of its own.
func newProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to process group pgid.
func signalGroup(pgid int, sig os.Signal) {
	if s, ok := sig.(syscall.Signal); ok {
		syscall.Kill(-pgid, s)
	}
}
