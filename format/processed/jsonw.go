package processed

import (
	"bufio"

	"github.com/gprof-dev/gprof/format/internal/jsonw"
)

// jsonWriter writes JSON values through a jsonw.Writer (shared with the
// Gecko writer), adding the commas between elements itself, so the
// processed writer can stream containers of any shape.
type jsonWriter struct {
	out *jsonw.Writer
	// first records, per open container, whether the next element needs no
	// leading comma.
	first []bool
	// afterKey is set between an object key and its value, whose comma the
	// key already accounted for.
	afterKey bool
}

func newJSONWriter(w *bufio.Writer) *jsonWriter {
	return &jsonWriter{out: jsonw.NewWriter(w), first: make([]bool, 0, 16)}
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
	j.out.Byte(',')
}

func (j *jsonWriter) beginObject() { j.sep(); j.out.Byte('{'); j.first = append(j.first, true) }
func (j *jsonWriter) endObject()   { j.first = j.first[:len(j.first)-1]; j.out.Byte('}') }
func (j *jsonWriter) beginArray()  { j.sep(); j.out.Byte('['); j.first = append(j.first, true) }
func (j *jsonWriter) endArray()    { j.first = j.first[:len(j.first)-1]; j.out.Byte(']') }

func (j *jsonWriter) key(k string) {
	j.sep()
	j.out.String(k)
	j.out.Byte(':')
	j.afterKey = true
}

// value writes pre-encoded JSON as one value.
func (j *jsonWriter) value(s string) { j.sep(); j.out.Raw(s) }

func (j *jsonWriter) valueBytes(b []byte) { j.sep(); j.out.Bytes(b) }

func (j *jsonWriter) str(s string) { j.sep(); j.out.String(s) }

func (j *jsonWriter) null() { j.sep(); j.out.Raw("null") }

func (j *jsonWriter) boolean(b bool) { j.sep(); j.out.Bool(b) }

func (j *jsonWriter) int(v int64) { j.sep(); j.out.Int(v) }

func (j *jsonWriter) uint(v uint64) { j.sep(); j.out.Uint(v) }

// scaled writes v/10^digits exactly, so nanosecond counts become
// milliseconds or microseconds without binary floating-point rounding.
func (j *jsonWriter) scaled(v int64, digits int) { j.sep(); j.out.Fixed(v, digits) }

// quote writes s as a JSON string (an object key or a value whose comma
// was written).
func (j *jsonWriter) quote(s string) { j.out.String(s) }
