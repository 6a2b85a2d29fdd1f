//go:build !linux && !darwin

package cmd

// exitSignalName is "" where exit statuses do not encode signals (Windows).
func exitSignalName(int) string { return "" }
