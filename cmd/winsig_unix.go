//go:build unix

package cmd

import (
	"os"
	"syscall"
)

// windowSignals close a window of --switch-output: SIGUSR2, as perf's.
var windowSignals = []os.Signal{syscall.SIGUSR2}
