//go:build !linux

package attach

// ExecHelperMain must be the first statement of main. It returns at once
// unless this process is gprof's launch helper, which exists only on Linux.
func ExecHelperMain() {}

// yieldToTargets is Linux's: the other platforms' samplers have their
// own priorities.
func yieldToTargets() {}
