package gecko

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gprof-dev/gprof/format/internal/limit"
)

// scanner is a pull parser for JSON text. Profiles run to hundreds of
// megabytes of small arrays; decoding them through interface values or
// reflection costs several times the memory of the result, so the reader
// asks for exactly the values it expects and skips the rest.
//
// Errors are raised by panicking with *syntaxError and recovered at the
// top of Read, which keeps the many small parse functions free of error
// plumbing.
type scanner struct {
	r    io.Reader
	buf  []byte
	pos  int   // next unread byte in buf
	end  int   // end of valid data in buf
	base int64 // input offset of buf[0]
	eof  bool

	depth int
	key   []byte // the current object key, copied out of buf
	str   []byte // scratch for unescaping

	meter *limit.Meter // what the reader holds, against the file's size
}

// syntaxError is one failure of the input, with where it happened.
type syntaxError struct {
	msg string
	off int64
	err error // an underlying read error, if that is what failed
}

func (e *syntaxError) Error() string {
	if errors.As(e.err, new(*limit.Error)) {
		return e.err.Error() // says what is wrong with the whole file
	}
	if errors.Is(e.err, io.ErrUnexpectedEOF) {
		// Kept in the chain, so that callers can tell a file cut short.
		return fmt.Sprintf("unexpected end of compressed input at byte %d", e.off)
	}
	if e.err != nil {
		return fmt.Sprintf("%v at byte %d", e.err, e.off)
	}
	return fmt.Sprintf("%s at byte %d", e.msg, e.off)
}

func (e *syntaxError) Unwrap() error { return e.err }

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = limit.Depth

// newScanner reads JSON from r, the contents of file, which pays for what
// the reader holds.
func newScanner(r io.Reader, file *limit.File) *scanner {
	return &scanner{r: r, buf: make([]byte, 1<<20), meter: limit.NewMeter(file)}
}

// hold charges n bytes the reader keeps to the file's budget, failing once
// it is spent.
func (s *scanner) hold(n int) {
	if err := s.meter.Hold(int64(n)); err != nil {
		panic(&syntaxError{err: err, off: s.offset()})
	}
}

// holdString charges a string the reader keeps.
func (s *scanner) holdString(v string) string {
	s.hold(16 + len(v))
	return v
}

func (s *scanner) fail(format string, args ...any) {
	panic(&syntaxError{msg: fmt.Sprintf(format, args...), off: s.base + int64(s.pos)})
}

func (s *scanner) offset() int64 { return s.base + int64(s.pos) }

func (s *scanner) failOff(off int64, format string, args ...any) {
	panic(&syntaxError{msg: fmt.Sprintf(format, args...), off: off})
}

func (s *scanner) failAt(i int, format string, args ...any) {
	panic(&syntaxError{msg: fmt.Sprintf(format, args...), off: s.base + int64(i)})
}

// fill reads more input, first dropping everything before keep, which the
// caller still needs. It returns how far the data moved and whether any
// was added.
func (s *scanner) fill(keep int) (shift int, ok bool) {
	if s.eof {
		return 0, false
	}
	if keep > 0 {
		copy(s.buf, s.buf[keep:s.end])
		s.end -= keep
		s.pos -= keep
		s.base += int64(keep)
	}
	if s.end == len(s.buf) {
		// One token fills the buffer.
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			if err == io.EOF {
				s.eof = true
				return keep, n > 0
			}
			panic(&syntaxError{err: err, off: s.base + int64(s.end)})
		}
		if n > 0 {
			return keep, true
		}
	}
}

// peek returns the next non-space byte without consuming it, or 0 at the
// end of input.
func (s *scanner) peek() byte {
	for {
		for s.pos < s.end {
			switch c := s.buf[s.pos]; c {
			case ' ', '\t', '\n', '\r':
				s.pos++
			default:
				return c
			}
		}
		if _, ok := s.fill(s.pos); !ok {
			return 0
		}
	}
}

func (s *scanner) unexpected(c byte, what string) {
	if c == 0 && s.pos >= s.end {
		s.fail("unexpected end of JSON input")
	}
	s.fail("invalid character %s %s", quoteChar(c), what)
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	if c >= 0x20 && c < 0x7f {
		return "'" + string(c) + "'"
	}
	return strconv.Quote(string(rune(c)))
}

func (s *scanner) expect(c byte, what string) {
	if got := s.peek(); got != c {
		s.unexpected(got, what)
	}
	s.pos++
}

// elem reports whether the array being read has an element number i,
// consuming the separator before it or the closing bracket after the last.
func (s *scanner) elem(i int) bool {
	c := s.peek()
	if c == ']' {
		s.pos++
		s.depth--
		return false
	}
	if i > 0 {
		if c != ',' {
			s.unexpected(c, "after array element")
		}
		s.pos++
	}
	return true
}

// field is elem for objects; on true, s.key holds the field name and the
// value is next.
func (s *scanner) field(i int) bool {
	c := s.peek()
	if c == '}' {
		s.pos++
		s.depth--
		return false
	}
	if i > 0 {
		if c != ',' {
			s.unexpected(c, "after object key:value pair")
		}
		s.pos++
		c = s.peek()
	}
	if c != '"' {
		s.unexpected(c, "looking for beginning of object key string")
	}
	s.key = append(s.key[:0], s.stringBytes()...)
	s.expect(':', "after object key")
	return true
}

func (s *scanner) enter() {
	s.depth++
	if s.depth > maxDepth {
		s.fail("exceeded max depth")
	}
}

// beginArray consumes '[' and reports true, or consumes null and reports
// false; anything else is an error naming what was expected.
func (s *scanner) beginArray(what string) bool {
	switch c := s.peek(); c {
	case '[':
		s.pos++
		s.enter()
		return true
	case 'n':
		s.literal()
		return false
	default:
		s.unexpected(c, "where "+what+" should be an array")
		return false
	}
}

func (s *scanner) beginObject(what string) bool {
	switch c := s.peek(); c {
	case '{':
		s.pos++
		s.enter()
		return true
	case 'n':
		s.literal()
		return false
	default:
		s.unexpected(c, "where "+what+" should be an object")
		return false
	}
}

// stringBytes reads a string and returns its contents, valid until the
// next read.
func (s *scanner) stringBytes() []byte {
	if c := s.peek(); c != '"' {
		s.unexpected(c, "looking for beginning of string")
	}
	start := s.pos + 1
	i := start
	for {
		if i >= s.end {
			// The string goes on past what is buffered, which is where
			// one too long would grow the buffer.
			s.stringLength(start, i)
			shift, ok := s.fill(s.pos)
			start -= shift
			i -= shift
			if !ok {
				s.pos = i
				s.fail("unexpected end of JSON input")
			}
			continue
		}
		c := s.buf[i]
		if c == '"' {
			s.stringLength(start, i)
			s.pos = i + 1
			return s.buf[start:i]
		}
		if c == '\\' {
			s.pos = start - 1
			return s.slowString()
		}
		if c < 0x20 {
			s.failAt(i, "invalid character %s in string literal", quoteChar(c))
		}
		i++
	}
}

// stringLength fails if the string from start to end is too long.
func (s *scanner) stringLength(start, end int) {
	if end-start > limit.String {
		s.failAt(start-1, "string longer than %s (more than a profile needs)", limit.MB(limit.String))
	}
}

// slowString decodes a string with escapes, starting at its opening quote.
// What it has decoded is in out, so the input before i is let go: a long
// string holds its decoded bytes once, not its escapes as well.
func (s *scanner) slowString() []byte {
	out := s.str[:0]
	at := s.offset()
	i := s.pos + 1
	need := func(n int) {
		for i+n > s.end {
			s.pos = i
			shift, ok := s.fill(i)
			i -= shift
			if !ok {
				s.pos = s.end
				s.fail("unexpected end of JSON input")
			}
		}
	}
	for {
		if len(out) > limit.String {
			s.failOff(at, "string longer than %s (more than a profile needs)", limit.MB(limit.String))
		}
		need(1)
		c := s.buf[i]
		switch {
		case c == '"':
			s.pos = i + 1
			s.str = out
			return out
		case c < 0x20:
			s.failAt(i, "invalid character %s in string literal", quoteChar(c))
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		need(2)
		switch e := s.buf[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			need(6)
			r := s.hex4(i + 2)
			i += 6
			if utf16.IsSurrogate(r) {
				need(6)
				if s.buf[i] == '\\' && s.buf[i+1] == 'u' {
					if r2 := utf16.DecodeRune(r, s.hex4(i+2)); r2 != utf8.RuneError {
						r = r2
						i += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			s.failAt(i+1, "invalid character %s in string escape code", quoteChar(e))
		}
		i += 2
	}
}

func (s *scanner) hex4(i int) rune {
	var r rune
	for j := i; j < i+4; j++ {
		d, ok := unhex(s.buf[j])
		if !ok {
			s.failAt(j, "invalid character %s in \\u hexadecimal character escape", quoteChar(s.buf[j]))
		}
		r = r<<4 | rune(d)
	}
	return r
}

// unhex returns the value of hexadecimal digit c, of either case.
func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func (s *scanner) string() string { return string(s.stringBytes()) }

// keptString reads a string, or null as "", that the reader keeps.
func (s *scanner) keptString() string { return s.holdString(s.stringOrNull()) }

// num is a JSON number kept in decimal, so that the fixed-point times gprof
// writes come back exactly: the value is ±mant×10^exp, or f when the digits
// did not fit.
type num struct {
	mant uint64
	exp  int32
	neg  bool
	big  bool
	f    float64
}

var numChar = [256]bool{'0': true, '1': true, '2': true, '3': true, '4': true, '5': true,
	'6': true, '7': true, '8': true, '9': true, '-': true, '+': true, '.': true, 'e': true, 'E': true}

func (s *scanner) number() num {
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		s.unexpected(c, "looking for beginning of value")
	}
	if s.end-s.pos < 32 {
		for s.end-s.pos < 32 {
			if _, ok := s.fill(s.pos); !ok {
				break
			}
		}
	}
	if n, ok := s.fastNumber(); ok {
		return n
	}
	start := s.pos
	i := start
	for {
		if i >= s.end {
			shift, ok := s.fill(start)
			start -= shift
			i -= shift
			if !ok {
				break
			}
			continue
		}
		if !numChar[s.buf[i]] {
			break
		}
		i++
		if i-start > limit.Number {
			s.failAt(start, "number longer than %d characters (more than a profile needs)", limit.Number)
		}
	}
	s.pos = i
	return s.parseNumber(start, s.buf[start:i])
}

// fastNumber parses the common plain numbers, up to 18 digits with an
// optional fraction and no exponent, in one pass. It reports false, having
// consumed nothing, for anything else, including numbers that may continue
// past the buffered input.
func (s *scanner) fastNumber() (num, bool) {
	var n num
	b := s.buf[:s.end]
	i := s.pos
	if b[i] == '-' {
		n.neg = true
		i++
	}
	digits := 0
	first := i
	for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		n.mant = n.mant*10 + uint64(b[i]-'0')
		digits++
	}
	if digits == 0 || b[first] == '0' && digits > 1 {
		return num{}, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		fd := 0
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
			n.mant = n.mant*10 + uint64(b[i]-'0')
			fd++
		}
		if fd == 0 {
			return num{}, false
		}
		digits += fd
		n.exp = -int32(fd)
	}
	if digits > 18 || i == len(b) && !s.eof {
		return num{}, false
	}
	if i < len(b) && numChar[b[i]] {
		return num{}, false // an exponent, or malformed: the full parser decides
	}
	s.pos = i
	return n, true
}

func (s *scanner) parseNumber(at int, b []byte) num {
	var n num
	bad := func() {
		s.failAt(at, "invalid number literal %q", b)
	}
	i := 0
	if i < len(b) && b[i] == '-' {
		n.neg = true
		i++
	}
	digits := func(frac bool) int {
		d := 0
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
			d++
			if n.big {
				continue
			}
			v := uint64(b[i] - '0')
			if n.mant > (math.MaxUint64-v)/10 {
				n.big = true
				continue
			}
			n.mant = n.mant*10 + v
			if frac {
				n.exp--
			}
		}
		return d
	}
	intStart := i
	if digits(false) == 0 || (b[intStart] == '0' && i-intStart > 1) {
		bad()
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits(true) == 0 {
			bad()
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		e, d := 0, 0
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
			d++
			if e < 100000 {
				e = e*10 + int(b[i]-'0')
			}
		}
		if d == 0 {
			bad()
		}
		if eneg {
			e = -e
		}
		n.exp += int32(e)
	}
	if i != len(b) {
		bad()
	}
	if n.big {
		n.f, _ = strconv.ParseFloat(string(b), 64)
	}
	return n
}

func (n num) float() float64 {
	if n.big {
		return n.f
	}
	f := float64(n.mant)
	if n.exp != 0 {
		// Exact enough for the values that reach here: they are metadata,
		// not the times and counts that go through fixed.
		f, _ = strconv.ParseFloat(strconv.FormatUint(n.mant, 10)+"e"+strconv.Itoa(int(n.exp)), 64)
	}
	if n.neg {
		f = -f
	}
	return f
}

// fixed returns n×10^d rounded to the nearest integer, saturating.
func (n num) fixed(d int) int64 {
	if n.big {
		return saturate(math.Round(n.f * math.Pow10(d)))
	}
	if n.mant == 0 {
		// The loops below would run once per unit of a huge exponent.
		return 0
	}
	e := int(n.exp) + d
	m := n.mant
	switch {
	case e > 0:
		for ; e > 0; e-- {
			if m > math.MaxInt64/10 {
				m = math.MaxInt64
				break
			}
			m *= 10
		}
	case e < 0:
		if e < -19 {
			m = 0
		} else {
			p := uint64(1)
			for ; e < 0; e++ {
				p *= 10
			}
			q, r := m/p, m%p
			if r >= p-r {
				q++
			}
			m = q
		}
	}
	if m > math.MaxInt64 {
		m = math.MaxInt64
	}
	if n.neg {
		return -int64(m)
	}
	return int64(m)
}

func saturate(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// uint returns n as an unsigned integer, or false if it is not one.
func (n num) uint() (uint64, bool) {
	if n.big || n.neg && n.mant != 0 {
		return 0, false
	}
	if n.mant == 0 {
		return 0, true // whatever the exponent, which the loops would count down
	}
	m := n.mant
	for e := n.exp; e > 0; e-- {
		if m > math.MaxUint64/10 {
			return 0, false
		}
		m *= 10
	}
	for e := n.exp; e < 0; e++ {
		if m%10 != 0 {
			return 0, false
		}
		m /= 10
	}
	return m, true
}

// int returns n as an int64, rounding any fraction.
func (n num) int() int64 { return n.fixed(0) }

// literal consumes true, false or null and returns which byte it began with.
func (s *scanner) literal() byte {
	c := s.peek()
	var want string
	switch c {
	case 't':
		want = "true"
	case 'f':
		want = "false"
	case 'n':
		want = "null"
	default:
		s.unexpected(c, "looking for beginning of value")
	}
	for s.end-s.pos < len(want) {
		if _, ok := s.fill(s.pos); !ok {
			break
		}
	}
	for j := 0; j < len(want); j++ {
		if s.pos+j >= s.end {
			s.pos += j
			s.fail("unexpected end of JSON input")
		}
		if s.buf[s.pos+j] != want[j] {
			s.failAt(s.pos+j, "invalid character %s in literal %s (expecting %s)", quoteChar(s.buf[s.pos+j]), want, quoteChar(want[j]))
		}
	}
	s.pos += len(want)
	return c
}

// null consumes a null if one is next.
func (s *scanner) null() bool {
	if s.peek() == 'n' {
		s.literal()
		return true
	}
	return false
}

// skip consumes one value of any kind.
func (s *scanner) skip() {
	switch c := s.peek(); c {
	case '{':
		s.pos++
		s.enter()
		for i := 0; s.field(i); i++ {
			s.skip()
		}
	case '[':
		s.pos++
		s.enter()
		for i := 0; s.elem(i); i++ {
			s.skip()
		}
	case '"':
		s.stringBytes()
	case 't', 'f', 'n':
		s.literal()
	default:
		s.number()
	}
}

// value reads one value into the types encoding/json would use, charging
// roughly what each part costs: the reader keeps these as marker data.
func (s *scanner) value() any {
	switch c := s.peek(); c {
	case '{':
		s.pos++
		s.enter()
		s.hold(64)
		m := map[string]any{}
		for i := 0; s.field(i); i++ {
			k := string(s.key)
			s.hold(48 + len(k))
			m[k] = s.value()
		}
		return m
	case '[':
		s.pos++
		s.enter()
		s.hold(24)
		a := []any{}
		for i := 0; s.elem(i); i++ {
			s.hold(16)
			a = append(a, s.value())
		}
		return a
	case '"':
		return s.holdString(s.string())
	case 't', 'f', 'n':
		switch s.literal() {
		case 't':
			return true
		case 'f':
			return false
		}
		return nil
	default:
		s.hold(8)
		return s.number().float()
	}
}

// intValue reads a number or a numeric string as an integer; processed
// profiles and some old Gecko ones write pids as strings.
func (s *scanner) intValue() int64 {
	if s.peek() == '"' {
		at := s.offset()
		b := s.stringBytes()
		v, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			s.failOff(at, "invalid integer %q", b)
		}
		return v
	}
	return s.number().int()
}

// idValue reads a pid or tid: a number, or a string holding one, such as
// "1234", or "1234.1" (format.TrackIDs), which reads as 1234.
func (s *scanner) idValue() int64 {
	if s.peek() != '"' {
		return s.number().int()
	}
	at := s.offset()
	b := s.stringBytes()
	if i := bytes.IndexByte(b, '.'); i >= 0 {
		b = b[:i]
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		s.failOff(at, "invalid id %q", b)
	}
	return v
}

// stringOrNull reads a string, accepting null (as "") and other scalars
// written where a string belongs.
func (s *scanner) stringOrNull() string {
	switch s.peek() {
	case '"':
		return s.string()
	case 'n':
		s.literal()
		return ""
	default:
		s.skip()
		return ""
	}
}

// end checks that nothing but space follows the top-level value.
func (s *scanner) finish() {
	if c := s.peek(); c != 0 || s.pos < s.end {
		s.unexpected(c, "after top-level value")
	}
}
