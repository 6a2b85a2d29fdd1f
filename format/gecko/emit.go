package gecko

import (
	"bufio"
	"strconv"
	"unicode/utf8"
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

// fixed writes v / 10^digits as an exact decimal with trailing zeros
// trimmed. Times are integers of nanoseconds in the model but milliseconds
// in Gecko; writing them this way keeps every nanosecond and lets the reader
// recover the integer exactly, which a float64 round trip would not.
func (e *emitter) fixed(v int64, digits int) {
	e.buf = appendFixed(e.buf[:0], v, digits)
	e.bytes(e.buf)
}

var pow10 = [...]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

func appendFixed(b []byte, v int64, digits int) []byte {
	u := uint64(v)
	if v < 0 {
		b = append(b, '-')
		u = uint64(-v) // also right for MinInt64, as unsigned
	}
	p := pow10[digits]
	b = strconv.AppendUint(b, u/p, 10)
	frac := u % p
	if frac == 0 {
		return b
	}
	b = append(b, '.')
	for p /= 10; frac != 0; p /= 10 {
		b = append(b, byte('0'+frac/p))
		frac %= p
	}
	return b
}

// ms writes ns nanoseconds as milliseconds.
func (e *emitter) ms(ns int64) { e.fixed(ns, 6) }

const hexDigits = "0123456789abcdef"

func (e *emitter) string(s string) {
	if e.err != nil {
		return
	}
	e.buf = appendString(e.buf[:0], s)
	e.bytes(e.buf)
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// in encoding/json, so the output always parses; U+2028 and U+2029 are
// escaped so the text is also valid JavaScript.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
