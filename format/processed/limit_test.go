package processed

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/format/internal/limit"
	"github.com/gprof-dev/gprof/format/internal/limit/limittest"
)

const bombHead = `{"meta":{"preprocessedProfileVersion":50,"startTime":0,"interval":1,"product":"x"},"libs":[],`

type bomb struct {
	name string
	in   []byte
	want string // in the error
}

// bombs are crafted inputs that Read must refuse, fast, with one line and
// in bounded memory, however much they ask for. They are fuzzing seeds too.
func bombs() []bomb {
	const big = 1 << 30
	return []bomb{
		{"long string", limittest.GzipBomb(bombHead+`"threads":[{"name":"`, "a", limit.String+1, `"}]}`), "string longer than"},
		{"long escaped string", limittest.GzipBomb(bombHead+`"threads":[{"name":"`, `\"`, 2*limit.String+2, `"}]}`), "string longer than"},
		{"whitespace", limittest.GzipBomb(bombHead+`"threads":[]`, " ", big, `}`), "gzip data expands to over"},
		{"threads", limittest.GzipBomb(bombHead+`"threads":[{}`, `,{}`, big, `]}`), "gzip data expands to over"},
		{"strings", limittest.GzipBomb(bombHead+`"shared":{"stringArray":[""`, `,""`, big, `]},"threads":[]}`), "gzip data expands to over"},
		{"column", limittest.GzipBomb(bombHead+`"threads":[{"samples":{"stack":[0`, `,0`, big, `]}}]}`), "gzip data expands to over"},
		{"deep", []byte(bombHead + `"threads":[{"markers":{"data":` + strings.Repeat("[", 1<<20)), "depth"},
		// Objects cost far more to hold than the bytes of "{}", so JSON
		// that is nothing else is refused before it is decoded.
		{"objects", limittest.GzipBomb(bombHead+`"threads":[{}`, `,{}`+strings.Repeat(" ", 8), 40<<20, `]}`), "memory"},
	}
}

// TestReadBombs checks that crafted inputs fail with one line while
// allocating no more than the limits allow.
func TestReadBombs(t *testing.T) {
	if testing.Short() {
		t.Skip("reads gigabyte-sized inputs")
	}
	for _, c := range bombs() {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Read(bytes.NewReader(c.in))
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

// TestReadLengthClaims checks that the tables' length fields, which Read
// does not trust, allocate nothing: only the data present counts.
func TestReadLengthClaims(t *testing.T) {
	in := []byte(bombHead + `"threads":[{"name":"t","stackTable":{"length":4294967295,"frame":[],"prefix":[]},` +
		`"frameTable":{"length":4294967295,"address":[],"func":[]},"funcTable":{"length":4294967295,"name":[]},` +
		`"samples":{"length":4294967295,"stack":[],"time":[]},"markers":{"length":4294967295,"name":[],"startTime":[],"endTime":[],"phase":[]}}]}`)
	var p interface{}
	allocs := testing.AllocsPerRun(3, func() {
		var err error
		if p, err = Read(bytes.NewReader(in)); err != nil {
			t.Fatal(err)
		}
	})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	Read(bytes.NewReader(in))
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("%d allocations of %d bytes in all for an empty thread", int(allocs), alloc)
	}
	_ = p
}

// TestReadErrorNamesShort checks that an error naming a thread keeps to a
// line of reasonable length however long the name.
func TestReadErrorNamesShort(t *testing.T) {
	in := bombHead + `"threads":[{"name":"` + strings.Repeat("n", 1<<20) + `"}]}`
	_, err := Read(strings.NewReader(in))
	if err == nil || len(err.Error()) > 300 {
		t.Fatalf("error of %d bytes: %.300v", len(err.Error()), err)
	}
}
