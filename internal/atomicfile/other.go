//go:build !unix

package atomicfile

import "os"

func keepOwner(*os.File, os.FileInfo) {}

func canWrite(string) error { return nil }

func replaceable(string, os.FileInfo) error { return nil }
