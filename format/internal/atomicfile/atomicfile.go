// Package atomicfile writes files so that a reader, or a crash, sees either
// the old file or the whole new one, never a half-written file.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write creates path with the bytes write produces. It writes a temporary
// file in the same directory (so the rename cannot cross file systems),
// syncs it, renames it over path, and syncs the directory so the rename
// itself is durable. On any error the temporary file is removed and path is
// left as it was.
func Write(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	// CreateTemp makes the file private; the result is an ordinary document.
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync() // best effort: some file systems cannot sync directories
		d.Close()
	}
	return nil
}
