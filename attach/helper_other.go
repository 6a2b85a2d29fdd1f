//go:build !linux

package attach

// ExecHelperMain must be the first statement of main. It returns at once
// unless this process is gprof's launch helper, which exists only on Linux.
func ExecHelperMain() {}
