//go:build !unix

package record

func inodeOf(string) (uint64, bool) { return 0, false }

func fileIDOf(string) (dev, ino uint64, ok bool) { return 0, 0, false }
