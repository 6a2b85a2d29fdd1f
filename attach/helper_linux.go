//go:build linux

package attach

import "github.com/gprof-dev/gprof/attach/internal/proc"

// ExecHelperMain must be the first statement of main. It returns at once
// unless this process is gprof's launch helper; the helper never returns.
// (When gprof launches a command, it re-executes itself as that helper:
// see package attach/internal/proc.)
func ExecHelperMain() { proc.ExecHelperMain() }
