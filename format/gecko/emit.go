package gecko

import (
	"bufio"
	"strconv"

	"github.com/gprof-dev/gprof/format/internal/jsonw"
)

// emitter writes JSON text piece by piece. It remembers the first write
// error and turns later writes into no-ops, so callers check once at the end.
type emitter struct {
	w   *bufio.Writer
	buf []byte // scratch for number formatting
	err error
}

func (e *emitter) raw(s string) {
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *emitter) bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *emitter) byte(c byte) {
	if e.err == nil {
		e.err = e.w.WriteByte(c)
	}
}

func (e *emitter) int(v int64) {
	e.buf = strconv.AppendInt(e.buf[:0], v, 10)
	e.bytes(e.buf)
}

func (e *emitter) uint(v uint64) {
	e.buf = strconv.AppendUint(e.buf[:0], v, 10)
	e.bytes(e.buf)
}

func (e *emitter) bool(v bool) {
	if v {
		e.raw("true")
	} else {
		e.raw("false")
	}
}

// fixed writes v / 10^digits exactly; see jsonw.AppendFixed.
func (e *emitter) fixed(v int64, digits int) {
	e.buf = jsonw.AppendFixed(e.buf[:0], v, digits)
	e.bytes(e.buf)
}

// ms writes ns nanoseconds as milliseconds.
func (e *emitter) ms(ns int64) { e.fixed(ns, 6) }

// string writes s as a JSON string that is also valid JavaScript.
func (e *emitter) string(s string) {
	if e.err != nil {
		return
	}
	e.buf = jsonw.AppendJSString(e.buf[:0], s)
	e.bytes(e.buf)
}
