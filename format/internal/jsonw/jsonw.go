// Package jsonw formats the JSON strings and numbers the gecko and
// processed writers emit by hand: they write far more tokens than
// encoding/json could afford to reflect over, and their output must stay
// byte for byte the same.
package jsonw

import (
	"strconv"
	"unicode/utf8"
)

var pow10 = [...]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// AppendFixed appends v / 10^digits, for digits from 0 to 9, as an exact
// decimal with trailing zeros trimmed. Times are integers of nanoseconds in
// the model but milliseconds or microseconds in the Firefox Profiler's
// formats; writing them this way keeps every nanosecond and lets a reader
// recover the integer exactly, which a float64 round trip would not.
func AppendFixed(b []byte, v int64, digits int) []byte {
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

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// in encoding/json, so the output always parses, whereas JSON.parse in the
// front-end would see mojibake or fail.
func AppendString(b []byte, s string) []byte { return appendString(b, s, false) }

// AppendJSString is AppendString that also escapes U+2028 and U+2029, so the
// text is valid JavaScript as well as JSON.
func AppendJSString(b []byte, s string) []byte { return appendString(b, s, true) }

const hexDigits = "0123456789abcdef"

func appendString(b []byte, s string, js bool) []byte {
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
		if js && (r == '\u2028' || r == '\u2029') {
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
