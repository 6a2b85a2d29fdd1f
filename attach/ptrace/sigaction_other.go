//go:build linux && !amd64 && !arm64

package ptrace

import "golang.org/x/sys/unix"

// Elsewhere the SIGCHLD of each stop is left as it is.
type sigaction struct{ handler, flags uint64 }

const saNoCldStop = 1

func getSigaction(unix.Signal) (sigaction, bool) { return sigaction{}, false }
func setSigaction(unix.Signal, sigaction) bool   { return false }
