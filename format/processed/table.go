package processed

import "github.com/gprof-dev/gprof/profile"

// The processed format stores its tables column-wise: an object whose keys
// are a length and one array per column, each as long as the table. A table
// is written here from its description, an ordered list of fields, so the
// emitter says which columns a table has and what each holds, and the loops
// that write arrays are the column kinds below, written once.

// A field is one key of an object and the writer of its value. Values are
// written when the object is, in the order of its fields, which matters for
// columns that intern strings as they are written.
type field struct {
	key   string
	value func(*jsonWriter)
}

// object writes fields as one JSON object.
func object(fields ...field) func(*jsonWriter) {
	return func(j *jsonWriter) {
		j.beginObject()
		for _, f := range fields {
			j.key(f.key)
			f.value(j)
		}
		j.endObject()
	}
}

// number writes n, a table's length.
func number(n int) func(*jsonWriter) {
	return func(j *jsonWriter) { j.int(int64(n)) }
}

// raw writes pre-encoded JSON.
func raw(s string) func(*jsonWriter) {
	return func(j *jsonWriter) { j.value(s) }
}

// ints writes a column of integers.
func ints[T int32 | int64 | uint8](v []T) func(*jsonWriter) {
	return func(j *jsonWriter) {
		j.beginArray()
		for _, x := range v {
			j.int(int64(x))
		}
		j.endArray()
	}
}

// uints writes a column of unsigned integers.
func uints(v []uint64) func(*jsonWriter) {
	return func(j *jsonWriter) {
		j.beginArray()
		for _, x := range v {
			j.uint(x)
		}
		j.endArray()
	}
}

// bools writes a column of booleans.
func bools(v []bool) func(*jsonWriter) {
	return func(j *jsonWriter) {
		j.beginArray()
		for _, x := range v {
			j.boolean(x)
		}
		j.endArray()
	}
}

// millis writes a column of nanosecond times as milliseconds.
func millis(v []int64) func(*jsonWriter) {
	return func(j *jsonWriter) {
		j.beginArray()
		for _, x := range v {
			j.ms(x)
		}
		j.endArray()
	}
}

// deltas writes a column of nanosecond times as the milliseconds from
// each to the next, the first from 0.
func deltas(v []int64) func(*jsonWriter) {
	return func(j *jsonWriter) {
		j.beginArray()
		var prev int64
		for _, x := range v {
			j.ms(x - prev)
			prev = x
		}
		j.endArray()
	}
}

// cpuDeltas writes a column of nanosecond CPU times as microseconds,
// negative (unknown) as null.
func cpuDeltas(v []int64) func(*jsonWriter) {
	return func(j *jsonWriter) {
		j.beginArray()
		for _, x := range v {
			if x < 0 {
				j.null()
			} else {
				j.scaled(x, 3)
			}
		}
		j.endArray()
	}
}

// stacks writes a column of the model's stack indexes as the output's,
// through out, with profile.NoStack as null.
func stacks(v, out []int32) func(*jsonWriter) {
	return func(j *jsonWriter) {
		j.beginArray()
		for _, s := range v {
			if s == profile.NoStack {
				j.null()
			} else {
				j.int(int64(out[s]))
			}
		}
		j.endArray()
	}
}

// indexes writes a column of optional table indexes, negative for none,
// as null.
func indexes(v []int32) func(*jsonWriter) {
	return func(j *jsonWriter) {
		j.beginArray()
		for _, x := range v {
			if x < 0 {
				j.null()
			} else {
				j.int(int64(x))
			}
		}
		j.endArray()
	}
}

// lines writes a column of line numbers, 0 (unknown) as null.
func lines(v []int32) func(*jsonWriter) {
	return func(j *jsonWriter) {
		j.beginArray()
		for _, x := range v {
			if x <= 0 {
				j.null()
			} else {
				j.int(int64(x))
			}
		}
		j.endArray()
	}
}

// repeat writes a column of n copies of lit, pre-encoded JSON: for the
// columns gprof has no data for, which the format requires all the same.
func repeat(n int, lit string) func(*jsonWriter) {
	return func(j *jsonWriter) {
		j.beginArray()
		for range n {
			j.value(lit)
		}
		j.endArray()
	}
}

// computed writes a column of n elements computed by elem, in order, for the
// columns that are not a slice the builder holds.
func computed(n int, elem func(j *jsonWriter, i int)) func(*jsonWriter) {
	return func(j *jsonWriter) {
		j.beginArray()
		for i := range n {
			elem(j, i)
		}
		j.endArray()
	}
}
