//go:build !linux

package attach

// resolveTargets: outside Linux the backends check their targets
// themselves.
func resolveTargets(*Options) error { return nil }
