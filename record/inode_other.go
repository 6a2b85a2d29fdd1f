//go:build !unix

package record

func inodeOf(string) (uint64, bool) { return 0, false }
