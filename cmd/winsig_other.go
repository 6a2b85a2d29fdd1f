//go:build !unix

package cmd

import "os"

// windowSignals close a window of --switch-output: none here (a --control
// "snapshot" still does).
var windowSignals []os.Signal
