package processed

import (
	"bufio"
	"strconv"
	"unicode/utf8"
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
	j.buf = appendScaled(j.buf[:0], v, digits)
	j.rawBytes(j.buf)
}

func appendScaled(b []byte, v int64, digits int) []byte {
	u := uint64(v)
	if v < 0 {
		b = append(b, '-')
		u = uint64(-v)
	}
	var pow uint64 = 1
	for i := 0; i < digits; i++ {
		pow *= 10
	}
	b = strconv.AppendUint(b, u/pow, 10)
	frac := u % pow
	if frac == 0 {
		return b
	}
	b = append(b, '.')
	start := len(b)
	for i := 0; i < digits; i++ {
		b = append(b, '0')
	}
	for i := len(b) - 1; i >= start; i-- {
		b[i] = byte('0' + frac%10)
		frac /= 10
	}
	for b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	return b
}

const hexDigits = "0123456789abcdef"

// quote writes s as a JSON string. Invalid UTF-8 becomes U+FFFD because
// JSON.parse in the front-end would otherwise see mojibake or fail.
func (j *jsonWriter) quote(s string) {
	if j.err != nil {
		return
	}
	w := j.w
	w.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			w.WriteString(s[start:i])
			switch c {
			case '"', '\\':
				w.WriteByte('\\')
				w.WriteByte(c)
			case '\n':
				w.WriteString(`\n`)
			case '\r':
				w.WriteString(`\r`)
			case '\t':
				w.WriteString(`\t`)
			default:
				w.WriteString(`\u00`)
				w.WriteByte(hexDigits[c>>4])
				w.WriteByte(hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			w.WriteString(s[start:i])
			w.WriteString(`\ufffd`)
			i += size
			start = i
			continue
		}
		i += size
	}
	w.WriteString(s[start:])
	j.err = w.WriteByte('"')
}
