package jsonw

import (
	"bufio"
	"strconv"
)

// Writer writes JSON text piece by piece into a bufio.Writer, for the
// Gecko and processed writers, which stream their output. It remembers the
// first write error and turns later writes into no-ops, so callers check
// once at the end (Err).
type Writer struct {
	w   *bufio.Writer
	buf []byte // scratch for number formatting
	err error
}

// NewWriter returns a Writer on w.
func NewWriter(w *bufio.Writer) *Writer { return &Writer{w: w, buf: make([]byte, 0, 64)} }

// Err returns the first write error.
func (e *Writer) Err() error { return e.err }

// Raw writes pre-encoded JSON text.
func (e *Writer) Raw(s string) {
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

// Bytes writes pre-encoded JSON text.
func (e *Writer) Bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

// Byte writes one byte of JSON text.
func (e *Writer) Byte(c byte) {
	if e.err == nil {
		e.err = e.w.WriteByte(c)
	}
}

func (e *Writer) Int(v int64) {
	e.buf = strconv.AppendInt(e.buf[:0], v, 10)
	e.Bytes(e.buf)
}

func (e *Writer) Uint(v uint64) {
	e.buf = strconv.AppendUint(e.buf[:0], v, 10)
	e.Bytes(e.buf)
}

func (e *Writer) Bool(v bool) {
	if v {
		e.Raw("true")
	} else {
		e.Raw("false")
	}
}

// Fixed writes v / 10^digits exactly; see AppendFixed.
func (e *Writer) Fixed(v int64, digits int) {
	e.buf = AppendFixed(e.buf[:0], v, digits)
	e.Bytes(e.buf)
}

// Ms writes ns nanoseconds as milliseconds.
func (e *Writer) Ms(ns int64) { e.Fixed(ns, 6) }

// String writes s as a JSON string.
func (e *Writer) String(s string) {
	if e.err != nil {
		return
	}
	e.buf = AppendString(e.buf[:0], s)
	e.Bytes(e.buf)
}

// JSString writes s as a JSON string that is also valid JavaScript.
func (e *Writer) JSString(s string) {
	if e.err != nil {
		return
	}
	e.buf = AppendJSString(e.buf[:0], s)
	e.Bytes(e.buf)
}

// Fail records err as the write error, unless there already is one.
func (e *Writer) Fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// Scratch returns the writer's scratch buffer, empty, for a caller that
// builds a long run of text itself; Keep hands it back (grown) for reuse.
func (e *Writer) Scratch() []byte { return e.buf[:0] }

// Keep takes back the scratch buffer.
func (e *Writer) Keep(b []byte) { e.buf = b[:0] }
