// Package limit bounds what the profile readers hold, so that a damaged or
// hostile file fails fast, with one line, instead of exhausting memory.
//
// The bounds follow from what a real profile needs rather than from a cap
// on its size:
//
//   - No JSON string a profile needs (a function name, a path, a marker's
//     text, a screenshot's data URL) comes near String bytes, and no
//     number near Number characters; no profile nests deeper than Depth.
//   - Everything a reader keeps is paid for by the file: it may hold at
//     most PerByte bytes of memory per byte of the file (compressed, if it
//     is gzipped), and never needs to stop below Floor. Real profiles
//     compress about 2 to 10 times and take about 2 to 20 bytes of memory
//     per byte of JSON, so they stay far below; a gzip bomb (deflate
//     expands up to 1032 times) or JSON whose every byte becomes an object
//     stops early. The same bound applies to the decompressed bytes
//     themselves, so a bomb of mere whitespace stops early too.
package limit

import (
	"fmt"
	"io"
	"sync/atomic"
)

const (
	String  = 16 << 20 // bytes in one JSON string, as written
	Number  = 1 << 10  // characters in one JSON number
	Depth   = 1000     // nesting of arrays and objects
	PerByte = 256      // bytes held per byte of file
	Floor   = 64 << 20
)

// Budget returns how many bytes reading a file of n bytes may hold, and
// how many decompressed bytes it may contain.
func Budget(n int64) int64 {
	if n > (1<<62)/PerByte {
		return 1 << 62
	}
	return max(Floor, PerByte*n)
}

// File counts the bytes read from a file. N may be called from another
// goroutine than Read's.
type File struct {
	r io.Reader
	n atomic.Int64
}

func NewFile(r io.Reader) *File { return &File{r: r} }

func (f *File) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	f.n.Add(int64(n))
	return n, err
}

// N returns how many bytes have been read.
func (f *File) N() int64 { return f.n.Load() }

// Inflated returns a reader of r, the decompressed contents of f, that
// fails once r has produced more than Budget(f.N()) bytes.
func Inflated(r io.Reader, f *File) io.Reader { return &inflated{r: r, f: f} }

type inflated struct {
	r   io.Reader
	f   *File
	n   int64
	max int64
}

func (z *inflated) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	z.n += int64(n)
	if z.n > z.max {
		z.max = Budget(z.f.N())
		if z.n > z.max {
			return n, &Error{fmt.Sprintf("its gzip data expands to over %s in the first %s of the file, more than a profile ever does (%s)", MB(z.max), MB(z.f.N()), rule)}
		}
	}
	return n, err
}

// rule says what bounds the readers; errors end with it.
var rule = fmt.Sprintf("readers allow %d× the file's size, at least %s; the file is damaged or made to exhaust memory", PerByte, MB(Floor))

// Meter charges what a reader holds against the file it reads.
type Meter struct {
	held, max int64
	f         *File
}

func NewMeter(f *File) *Meter { return &Meter{f: f} }

// Hold charges n bytes; it returns an error once more is held than the
// file pays for.
func (m *Meter) Hold(n int64) error {
	m.held += n
	if m.held <= m.max {
		return nil
	}
	return m.over()
}

func (m *Meter) over() error {
	n := m.f.N()
	m.max = Budget(n)
	return Check(m.held, n)
}

// Check returns an error if holding held bytes is more than a file of n
// bytes pays for.
func Check(held, n int64) error {
	if max := Budget(n); held > max {
		return &Error{fmt.Sprintf("reading it takes over %s of memory in the first %s of the file, more than a profile ever needs (%s)", MB(max), MB(n), rule)}
	}
	return nil
}

// Error is a file going past a limit; it says so in one line, of the
// whole file rather than of a place in it.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// MB formats a byte count for an error message.
func MB(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
