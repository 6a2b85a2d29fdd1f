// Package atomicfile writes output files safely. A regular file (or a new
// one) is replaced atomically, so a reader, a crash or an interrupt sees
// either the old file or the whole new one, never a half-written file.
// Anything else that can be written (a terminal, /dev/null, a FIFO) is
// written in place and never replaced: as root, renaming over /dev/null
// would turn it into a regular file for the whole machine.
//
// Errors name the path the caller asked for, never a temporary file.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

var (
	// mu guards temps and every rename into place, so that Abort either
	// removes a temporary file before its rename or runs after it.
	mu    sync.Mutex
	temps = map[string]bool{}
)

// Abort removes every temporary file being written and makes every write
// in progress block before it would rename into place, so no output
// appears and old files stay as they were. It is for a process about to
// exit on a signal: once called, no file can be written any more.
func Abort() {
	mu.Lock()
	for name := range temps {
		os.Remove(name)
		delete(temps, name)
	}
	// mu stays locked until the process exits.
}

// target is what writing to a path means.
type target struct {
	real   string      // the file to replace, after symbolic links
	old    os.FileInfo // the existing regular file, or nil
	direct bool        // write in place: a device, a FIFO
}

// reason is an error worded for people that still matches its cause with
// errors.Is (fs.ErrPermission, syscall.ENOSPC...).
type reason struct {
	msg string
	err error
}

func (r reason) Error() string { return r.msg }
func (r reason) Unwrap() error { return r.err }

// cause strips the file name from errors of the os package, which may be
// a temporary file's.
func cause(err error) error {
	switch e := err.(type) {
	case *fs.PathError:
		return e.Err
	case *os.LinkError:
		return e.Err
	case *os.SyscallError:
		return e.Err
	}
	return err
}

func pathError(path string, err error) error {
	return fmt.Errorf("%s: %w", path, err)
}

// resolve says how path is to be written, or why it cannot be.
func resolve(path string) (target, error) {
	st, err := os.Stat(path)
	switch {
	case err == nil && st.Mode().IsRegular():
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return target{}, pathError(path, cause(err))
		}
		if rst, err := os.Stat(real); err != nil || !os.SameFile(st, rst) {
			// A link that does not name its file, such as
			// /proc/self/fd/N of a deleted file: write it in place.
			return target{real: path, direct: true}, nil
		}
		return target{real: real, old: st}, nil
	case err == nil && st.IsDir():
		return target{}, pathError(path, errors.New("is a directory; give a file name"))
	case err == nil && st.Mode()&(os.ModeCharDevice|os.ModeNamedPipe) != 0:
		return target{real: path, direct: true}, nil
	case err == nil:
		return target{}, pathError(path, fmt.Errorf("is a %s; write to a regular file, a character device such as /dev/null, or a FIFO", kindOf(st.Mode())))
	case errors.Is(err, syscall.ENOTDIR):
		return target{}, pathError(path, fmt.Errorf("%s is not a directory", filepath.Dir(path)))
	case !errors.Is(err, fs.ErrNotExist):
		return target{}, pathError(path, cause(err))
	}
	// A new file, possibly the target of a symbolic link that leads
	// nowhere yet (created, as a shell's '>' would).
	real, err := danglingTarget(path)
	if err != nil {
		return target{}, pathError(path, err)
	}
	dir := filepath.Dir(real)
	dst, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return target{}, pathError(path, reason{fmt.Sprintf("directory %s does not exist", dir), fs.ErrNotExist})
	case err != nil:
		return target{}, pathError(path, cause(err))
	case !dst.IsDir():
		return target{}, pathError(path, fmt.Errorf("%s is not a directory", dir))
	}
	return target{real: real}, nil
}

// danglingTarget follows the symbolic links from path to the name they
// end at, which does not exist.
func danglingTarget(path string) (string, error) {
	for range 40 {
		st, err := os.Lstat(path)
		if err != nil || st.Mode()&os.ModeSymlink == 0 {
			return path, nil
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", cause(err)
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return "", syscall.ELOOP
}

func kindOf(m os.FileMode) string {
	switch {
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "block device"
	}
	return "special file"
}

// Check reports early, before any long work, whether Write(path) can
// succeed: the directory exists and files can be created in it, or the
// device or FIFO is writable. It opens nothing (opening a FIFO would wait
// for a reader) and leaves nothing behind.
func Check(path string) error {
	t, err := resolve(path)
	if err != nil {
		return err
	}
	if t.direct {
		if err := canWrite(t.real); err != nil {
			return pathError(path, cause(err))
		}
		return nil
	}
	if t.old != nil {
		if err := replaceable(t.real, t.old); err != nil {
			return pathError(path, err)
		}
	}
	f, name, err := createTemp(t.real, 0o600)
	if err != nil {
		return pathError(path, err)
	}
	f.Close()
	mu.Lock()
	os.Remove(name)
	delete(temps, name)
	mu.Unlock()
	return nil
}

// Write writes path with the bytes write produces. A regular or new file
// is written as a temporary file in the same directory (so the rename
// cannot cross file systems) with the old file's mode and owner (or the
// umask's mode for a new file), synced, renamed over path's real file
// (symbolic links are followed and kept), and the directory synced so the
// rename itself is durable; on any error the temporary file is removed and
// the old file is left as it was. A character device or FIFO is written in
// place. Anything else is refused.
func Write(path string, write func(io.Writer) error) (err error) {
	t, err := resolve(path)
	if err != nil {
		return err
	}
	if t.direct {
		return writeDirect(path, write)
	}
	perm := os.FileMode(0o666) // less the umask, as for any new file
	if t.old != nil {
		perm = 0o600 // until it has the old file's owner and mode
	}
	f, name, err := createTemp(t.real, perm)
	if err != nil {
		return pathError(path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			mu.Lock()
			os.Remove(name)
			delete(temps, name)
			mu.Unlock()
			err = pathError(path, cause(err))
		}
	}()
	if err = write(&tempWriter{f}); err != nil {
		return err
	}
	if t.old != nil {
		keepOwner(f, t.old) // before chmod: chown clears set-id bits
		if err = f.Chmod(t.old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
			return err
		}
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	mu.Lock()
	err = os.Rename(name, t.real)
	if err == nil {
		delete(temps, name)
	}
	mu.Unlock()
	if err != nil {
		return err
	}
	if d, derr := os.Open(filepath.Dir(t.real)); derr == nil {
		d.Sync() // best effort: some file systems cannot sync directories
		d.Close()
	}
	return nil
}

// createTemp creates a new hidden file next to real, which Abort removes
// until it is renamed or removed.
func createTemp(real string, perm os.FileMode) (*os.File, string, error) {
	dir, base := filepath.Split(real)
	if dir == "" {
		dir = "."
	}
	if len(base) > 200 {
		base = base[:200] // room for the suffix within NAME_MAX
	}
	mu.Lock()
	defer mu.Unlock()
	for range 100 {
		name := filepath.Join(dir, "."+base+".tmp"+strconv.FormatUint(rand.Uint64()%(1<<40), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return nil, "", reason{"no permission to create files in " + filepath.Clean(dir), cause(err)}
			}
			return nil, "", cause(err)
		}
		temps[name] = true
		return f, name, nil
	}
	return nil, "", fmt.Errorf("cannot create a temporary file in %s", filepath.Clean(dir))
}

// tempWriter returns write errors without the temporary file's name.
type tempWriter struct{ f *os.File }

func (w *tempWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	return n, cause(err)
}

// writeDirect writes a device or FIFO in place. Opening a FIFO waits for a
// reader, as a shell's '>' does.
func writeDirect(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return pathError(path, cause(err))
	}
	err = write(&tempWriter{f})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return pathError(path, cause(err))
	}
	return nil
}
