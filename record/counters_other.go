//go:build !linux

package record

// No counters outside Linux yet: the sampler is not started.
func newCounterProbe() counterProbe { return nil }

func lockThread() {}
