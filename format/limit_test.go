package format

import (
	"bytes"
	"compress/gzip"
	"runtime"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/format/internal/limit"
)

// gzBomb gzips head, unit repeated to about n bytes, and tail, repeating
// one gzip member of the units so that a gigabyte bomb builds in a moment.
func gzBomb(head, unit string, n int, tail string) []byte {
	member := func(s string) []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write([]byte(s))
		zw.Close()
		return buf.Bytes()
	}
	block := strings.Repeat(unit, (1<<20)/len(unit))
	out := member(head)
	out = append(out, bytes.Repeat(member(block), n/len(block))...)
	return append(out, member(tail)...)
}

type bomb struct {
	name string
	in   []byte
	want string // in the error
}

// bombs are crafted inputs that Reader must refuse, fast, with one line
// and in bounded memory. They are fuzzing seeds too.
func bombs() []bomb {
	const gecko = `{"meta":{"version":29,"startTime":0,"interval":1,"product":"x"},`
	const processed = `{"meta":{"preprocessedProfileVersion":50,"startTime":0,"interval":1,"product":"x"},`
	return []bomb{
		{"gecko threads", gzBomb(gecko+`"threads":[{}`, `,{}`, 1<<30, `]}`), "memory"},
		{"gecko whitespace", gzBomb(gecko+`"threads":[]`, ` `, 1<<30, `}`), "gzip data expands to over"},
		{"processed threads", gzBomb(processed+`"threads":[{}`, `,{}`, 1<<30, `]}`), "gzip data expands to over"},
		{"processed whitespace", gzBomb(processed+`"threads":[]`, ` `, 1<<30, `}`), "gzip data expands to over"},
		{"processed string", gzBomb(processed+`"threads":[],"libs":[{"name":"`, `a`, limit.String+(1<<20), `"}]}`), "string longer than"},
	}
}

// TestReaderBombs checks that the sniffing reader leaves the format
// readers bounded by the file's size, not by what it decompressed for
// them: both formats, bombs of memory and of mere bytes.
func TestReaderBombs(t *testing.T) {
	if testing.Short() {
		t.Skip("reads gigabyte-sized inputs")
	}
	for _, c := range bombs() {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, _, err := Reader(bytes.NewReader(c.in))
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes: %v; allocated %d MiB", len(c.in), err, alloc>>20)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q, want one line mentioning %q", err, c.want)
			}
			if bound := 4 * uint64(limit.Budget(int64(len(c.in)))); alloc > bound {
				t.Errorf("allocated %d MiB, more than %d MiB", alloc>>20, bound>>20)
			}
		})
	}
}
