package processed

import (
	"bufio"
	"strconv"

	"github.com/gprof-dev/gprof/format/internal/jsonw"
)

// jsonWriter emits JSON tokens straight into a bufio.Writer. It keeps the
// first error and turns later writes into no-ops so callers can check once at
// the end instead of after every token.
type jsonWriter struct {
	w   *bufio.Writer
	err error
	buf []byte // scratch for number formatting
	// first records, per open container, whether the next element needs no
	// leading comma.
	first []bool
	// afterKey is set between an object key and its value, whose comma the
	// key already accounted for.
	afterKey bool
}

func newJSONWriter(w *bufio.Writer) *jsonWriter {
	return &jsonWriter{w: w, buf: make([]byte, 0, 64), first: make([]bool, 0, 16)}
}

func (j *jsonWriter) raw(s string) {
	if j.err == nil {
		_, j.err = j.w.WriteString(s)
	}
}

func (j *jsonWriter) rawBytes(b []byte) {
	if j.err == nil {
		_, j.err = j.w.Write(b)
	}
}

func (j *jsonWriter) byte1(c byte) {
	if j.err == nil {
		j.err = j.w.WriteByte(c)
	}
}

// sep writes the comma that precedes every element but the first.
func (j *jsonWriter) sep() {
	if j.afterKey {
		j.afterKey = false
		return
	}
	n := len(j.first)
	if n == 0 {
		return
	}
	if j.first[n-1] {
		j.first[n-1] = false
		return
	}
	j.byte1(',')
}

func (j *jsonWriter) beginObject() { j.sep(); j.byte1('{'); j.first = append(j.first, true) }
func (j *jsonWriter) endObject()   { j.first = j.first[:len(j.first)-1]; j.byte1('}') }
func (j *jsonWriter) beginArray()  { j.sep(); j.byte1('['); j.first = append(j.first, true) }
func (j *jsonWriter) endArray()    { j.first = j.first[:len(j.first)-1]; j.byte1(']') }

func (j *jsonWriter) key(k string) {
	j.sep()
	j.quote(k)
	j.byte1(':')
	j.afterKey = true
}

// value writes pre-encoded JSON as one value.
func (j *jsonWriter) value(s string) { j.sep(); j.raw(s) }

func (j *jsonWriter) valueBytes(b []byte) { j.sep(); j.rawBytes(b) }

func (j *jsonWriter) str(s string) { j.sep(); j.quote(s) }

func (j *jsonWriter) null() { j.sep(); j.raw("null") }

func (j *jsonWriter) boolean(b bool) {
	j.sep()
	if b {
		j.raw("true")
	} else {
		j.raw("false")
	}
}

func (j *jsonWriter) int(v int64) {
	j.sep()
	j.buf = strconv.AppendInt(j.buf[:0], v, 10)
	j.rawBytes(j.buf)
}

func (j *jsonWriter) uint(v uint64) {
	j.sep()
	j.buf = strconv.AppendUint(j.buf[:0], v, 10)
	j.rawBytes(j.buf)
}

// scaled writes v/10^digits exactly, so nanosecond counts become
// milliseconds or microseconds without binary floating-point rounding.
func (j *jsonWriter) scaled(v int64, digits int) {
	j.sep()
	j.buf = jsonw.AppendFixed(j.buf[:0], v, digits)
	j.rawBytes(j.buf)
}

// quote writes s as a JSON string.
func (j *jsonWriter) quote(s string) {
	if j.err != nil {
		return
	}
	j.buf = jsonw.AppendString(j.buf[:0], s)
	j.rawBytes(j.buf)
}
