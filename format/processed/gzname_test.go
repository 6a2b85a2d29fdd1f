package processed

import (
	"os"
	"path/filepath"
	"testing"
)

// The .gz suffix is recognized in any case: P.JSON.GZ is gzipped too.
func TestWriteFileGzipAnyCase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "P.JSON.GZ")
	if err := WriteFile(path, testProfile()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("%s is not gzip", path)
	}
}
