//go:build !linux

package record

// osDescription names the platform; the release is read on Linux only.
func osDescription() string { return platformName() }

// cpuName is known on Linux only (/proc/cpuinfo).
func cpuName() string { return "" }
