//go:build unix

package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// noTemps fails if dir holds anything but want.
func noTemps(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("%s holds %v, want %v", dir, names, want)
	}
}

func TestWriteNewFileFollowsUmask(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := Write(path, writeString("new")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(b) != "new" || st.Mode() != 0o640 {
		t.Errorf("got %q mode %v, want \"new\" -rw-r-----", b, st.Mode())
	}
	noTemps(t, dir, "out.json")
}

// Replacing a file keeps its mode, even a read-only one: it is the user's
// own output path, and the directory is what allows replacing it.
func TestWriteKeepsMode(t *testing.T) {
	for _, mode := range []os.FileMode{0o600, 0o444, 0o640} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.json")
			os.WriteFile(path, []byte("old"), 0o600)
			os.Chmod(path, mode)
			if err := Write(path, writeString("new")); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			st, _ := os.Stat(path)
			if string(b) != "new" || st.Mode() != mode {
				t.Errorf("got %q mode %v, want \"new\" %v", b, st.Mode(), mode)
			}
			noTemps(t, dir, "out.json")
		})
	}
}

// Root writing over a user's file leaves it the user's.
func TestWriteKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	os.WriteFile(path, []byte("old"), 0o640)
	if err := os.Chown(path, 1234, 5678); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, writeString("new")); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	sys := st.Sys().(*syscall.Stat_t)
	if sys.Uid != 1234 || sys.Gid != 5678 || st.Mode() != 0o640 {
		t.Errorf("owner %d:%d mode %v, want 1234:5678 -rw-r-----", sys.Uid, sys.Gid, st.Mode())
	}
}

// A symlink is followed: its target gets the new content, atomically, and
// the link stays a link. A dangling link creates its target.
func TestWriteFollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	target := filepath.Join(dir, "real", "p.json.gz")
	os.WriteFile(target, []byte("old"), 0o600)
	link := filepath.Join(dir, "link.json.gz")
	os.Symlink(filepath.Join("real", "p.json.gz"), link)
	link2 := filepath.Join(dir, "link2")
	os.Symlink("link.json.gz", link2) // a chain of two
	if err := Write(link2, writeString("new")); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{link, link2} {
		if st, err := os.Lstat(l); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symlink", l)
		}
	}
	st, _ := os.Stat(target)
	if b, _ := os.ReadFile(target); string(b) != "new" || st.Mode() != 0o600 {
		t.Errorf("target holds %q mode %v, want \"new\" 0600", b, st.Mode())
	}
	noTemps(t, filepath.Join(dir, "real"), "p.json.gz")

	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join("real", "made.json"), dangling)
	if err := Write(dangling, writeString("made")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "real", "made.json")); string(b) != "made" {
		t.Errorf("dangling link's target holds %q", b)
	}
	if st, _ := os.Lstat(dangling); st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the dangling link was replaced")
	}
}

// A FIFO is written in place, never replaced by a regular file.
func TestWriteFIFO(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	if err := Check(fifo); err != nil {
		t.Fatal(err)
	}
	if err := Write(fifo, writeString("through the pipe")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through the pipe" {
		t.Errorf("reader got %q", s)
	}
	if st, _ := os.Lstat(fifo); st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO became %v", st.Mode())
	}
	noTemps(t, dir, "fifo")
}

// /dev/null stays the character device (as root a rename over it would
// succeed and break the whole machine).
func TestWriteDevNull(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no /dev/null")
	}
	if err := Check(os.DevNull); err != nil {
		t.Fatal(err)
	}
	if err := Write(os.DevNull, writeString("discarded")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(os.DevNull)
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is now %v (%v)", st.Mode(), err)
	}
	// A symlink to it is followed too.
	link := filepath.Join(t.TempDir(), "null.json.gz")
	os.Symlink(os.DevNull, link)
	if err := Write(link, writeString("discarded")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link to /dev/null was replaced")
	}
}

func TestWriteRefusesDirectory(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	for _, f := range []func(string) error{Check, func(p string) error { return Write(p, writeString("x")) }} {
		err := f(sub)
		if err == nil || !strings.Contains(err.Error(), "is a directory") || !strings.HasPrefix(err.Error(), sub+": ") {
			t.Errorf("err = %v, want %s: is a directory", err, sub)
		}
	}
	if st, _ := os.Stat(sub); !st.IsDir() {
		t.Errorf("the directory was replaced")
	}
	noTemps(t, dir, "sub")
}

// Errors name the file asked for, never a temporary file.
func TestErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nodir", "out.json")
	for _, f := range []func(string) error{Check, func(p string) error { return Write(p, writeString("x")) }} {
		err := f(missing)
		if err == nil || !strings.Contains(err.Error(), "does not exist") || strings.Contains(err.Error(), ".tmp") {
			t.Errorf("err = %v", err)
		}
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(t.TempDir(), "ro")
		os.Mkdir(ro, 0o555)
		err := Check(filepath.Join(ro, "out.json"))
		if !errors.Is(err, os.ErrPermission) || strings.Contains(err.Error(), "probe") || strings.Contains(err.Error(), ".tmp") {
			t.Errorf("err = %v", err)
		}
	}
	boom := errors.New("boom")
	path := filepath.Join(dir, "out.json")
	err := Write(path, func(w io.Writer) error {
		_, err := w.Write([]byte("x"))
		if err != nil {
			return err
		}
		// A write error from the file names the path, not the temp file.
		f := w.(*tempWriter).f
		f.Close()
		_, err = w.Write([]byte("y"))
		if err == nil {
			return boom
		}
		return err
	})
	if err == nil || strings.Contains(err.Error(), ".tmp") || strings.Contains(err.Error(), ".out.json") {
		t.Errorf("err = %v names a temporary file", err)
	}
	noTemps(t, dir)
}

// A failing write leaves the old file untouched and no temporary file.
func TestWriteFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	os.WriteFile(path, []byte("old"), 0o644)
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error { io.WriteString(w, "half"); return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("old file changed to %q", b)
	}
	noTemps(t, dir, "out.json")
}

// Abort, as on a second Ctrl-C, removes a temporary file being written, and
// the old file stays.
func TestAbortRemovesTemp(t *testing.T) {
	defer mu.Unlock()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	os.WriteFile(path, []byte("old"), 0o644)
	writing := make(chan struct{})
	resume := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Write(path, func(w io.Writer) error {
			io.WriteString(w, "half")
			close(writing)
			<-resume
			return nil
		})
	}()
	<-writing
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("no temporary file while writing: %v", entries)
	}
	Abort()
	noTemps(t, dir, "out.json")
	close(resume)
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Write finished after Abort: %v", err)
	default:
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("old file changed to %q", b)
	}
}
