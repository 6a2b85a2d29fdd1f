//go:build !linux

package attach

// resolveTargets: outside Linux the backends check their targets
// themselves.
func resolveTargets(*Options) error { return nil }

// FirstMapped names the files o's command maps as it starts: known on
// Linux only.
func FirstMapped(o Options) []string { return nil }
