//go:build !unix

package cmd

import (
	"os"
	"syscall"
)

// newProcessGroup: no process groups here.
func newProcessGroup() *syscall.SysProcAttr { return nil }

// signalGroup ends the process: there are no groups to signal here.
func signalGroup(pid int, sig os.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
