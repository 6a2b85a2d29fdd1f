package gecko

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/format/internal/limit"
	"github.com/gprof-dev/gprof/format/internal/limit/limittest"
)

// bomb is a crafted input: head, then unit n times, then tail, gzipped
// when zip is set. Each must fail fast, with one line, in bounded memory.
type bomb struct {
	name, head, unit string
	n                int // bytes of repeated units
	tail             string
	zip              bool
	want             string // in the error
}

// bombs that the readers must refuse. The repeated parts are sized so
// that reading them whole would take gigabytes; the gzipped ones are a
// few hundred kilobytes on disk.
var bombs = []bomb{
	{"long string", metaHead + `"product":"`, "a", limit.String + 1, `"},"threads":[]}`, true, "string longer than"},
	{"long escaped string", metaHead + `"product":"`, `\u00e9`, 6 * (limit.String/2 + 1), `"},"threads":[]}`, true, "string longer than"},
	{"long key", metaHead + `"`, "k", limit.String + 1, `":1},"threads":[]}`, true, "string longer than"},
	{"long number", metaHead + `"product":1`, "1", half, `},"threads":[]}`, true, "number longer than"},
	{"deep", metaHead + `"product":`, "[", half, ``, true, "exceeded max depth"},
	{"empty threads", metaHead + `"product":"x"},"threads":[{}`, `,{}`, half, `]}`, true, "memory"},
	{"empty processes", metaHead + `"product":"x"},"threads":[],"processes":[{}`, `,{}`, half, `]}`, true, "memory"},
	{"empty libs", metaHead + `"product":"x"},"threads":[],"libs":[{}`, `,{}`, half, `]}`, true, "memory"},
	{"string table", metaHead + `"product":"x"},"threads":[{"stringTable":[""`, `,""`, half, `]}]}`, true, "memory"},
	{"row before schema", metaHead + `"product":"x"},"threads":[{"samples":{"data":[[0`, `,0`, half, `]],"schema":{"stack":0}}}]}`, true, "memory"},
	{"samples", metaHead + `"product":"x"},"threads":[{"samples":{"schema":{"stack":0},"data":[[null]`, `,[null]`, half, `]}}]}`, true, "memory"},
	{"marker data", metaHead + `"product":"x"},"threads":[{"stringTable":["m"],"markers":{"schema":{"name":0,"data":1},"data":[[0,[{}`, `,{}`, half, `]]]}}]}`, true, "memory"},
	{"symbols", metaHead + `"product":"x"},"threads":[],"gprofSymbols":{"libs":[{"strings":[""],"funcs":[[0,0,0]],"addrs":[[0,0,0,0]`, `,[1,0,0,0]`, half, `]}]}}`, true, "memory"},
	{"whitespace", metaHead + `"product":"x"`, " ", half, `},"threads":[]}`, true, "gzip data expands to over"},
	{"zeros", "", "\x00", half, "", true, "invalid character"},
}

// half is the size of the bombs' repeated parts: reading them whole would
// take gigabytes, while the limits stop them within the floor's reach.
const half = 512 << 20

const metaHead = `{"meta":{"version":29,"startTime":0,"interval":1,`

// bytes returns the bomb as a file would hold it: gzipped as
// limittest.GzipBomb builds it, so that even a gigabyte bomb is built in
// a moment, or plain.
func (b bomb) bytes(t testing.TB) []byte {
	if b.zip {
		return limittest.GzipBomb(b.head, b.unit, b.n, b.tail)
	}
	n := b.n / len(b.unit)
	return []byte(b.head + strings.Repeat(b.unit, n) + b.tail)
}

// TestReadBombs checks that every crafted input fails with one line while
// allocating no more than the limits allow, however much it asks for.
func TestReadBombs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gigabyte-sized inputs")
	}
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			in := b.bytes(t)
			err, alloc := readAlloc(in)
			t.Logf("%d bytes in: %v; allocated %d MiB", len(in), err, alloc>>20)
			if err == nil {
				t.Fatalf("read without error")
			} else if !strings.Contains(err.Error(), b.want) {
				t.Errorf("error %q does not mention %q", err, b.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error %q", err)
			}
			// Whatever is held is paid for by the file, within a few times
			// the floor for growth and garbage.
			if bound := uint64(limit.Budget(int64(len(in)))) * 4; alloc > bound {
				t.Errorf("allocated %d MiB, more than %d MiB", alloc>>20, bound>>20)
			}
		})
	}
}

// readAlloc reads in and reports the error and the bytes allocated.
func readAlloc(in []byte) (error, uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Read(bytes.NewReader(in))
	runtime.ReadMemStats(&after)
	return err, after.TotalAlloc - before.TotalAlloc
}

// TestReadErrorNamesShort checks that an error naming a thread keeps to a
// line of reasonable length however long the name.
func TestReadErrorNamesShort(t *testing.T) {
	in := metaHead + `"product":"x"},"threads":[{"name":"` + strings.Repeat("n", 1<<20) + `","samples":{"schema":{"stack":0},"data":[[5]]}}]}`
	_, err := Read(strings.NewReader(in))
	if err == nil || len(err.Error()) > 300 {
		t.Fatalf("error of %d bytes: %.300v", len(err.Error()), err)
	}
}
