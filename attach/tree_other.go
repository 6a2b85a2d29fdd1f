//go:build !linux

package attach

// Descendants returns pid alone: finding a process's children is not
// done on this platform yet.
func Descendants(pid int) []int { return []int{pid} }
