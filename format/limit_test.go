package format

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/format/internal/limit"
	"github.com/gprof-dev/gprof/format/internal/limit/limittest"
)

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
		{"gecko threads", limittest.GzipBomb(gecko+`"threads":[{}`, `,{}`, 1<<30, `]}`), "memory"},
		{"gecko whitespace", limittest.GzipBomb(gecko+`"threads":[]`, ` `, 1<<30, `}`), "gzip data expands to over"},
		{"processed threads", limittest.GzipBomb(processed+`"threads":[{}`, `,{}`, 1<<30, `]}`), "gzip data expands to over"},
		{"processed whitespace", limittest.GzipBomb(processed+`"threads":[]`, ` `, 1<<30, `}`), "gzip data expands to over"},
		{"processed string", limittest.GzipBomb(processed+`"threads":[],"libs":[{"name":"`, `a`, limit.String+(1<<20), `"}]}`), "string longer than"},
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
