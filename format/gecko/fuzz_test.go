package gecko

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// FuzzRead checks that no input makes Read panic or return an error that
// spans lines, and that whatever it accepts can be written and read back.
// Seeds live in testdata/fuzz/FuzzRead.
func FuzzRead(f *testing.F) {
	f.Add(encode(f, testProfile()))
	// With paused ranges (record -D, --control), one still open.
	paused := testProfile()
	paused.Meta.PausedRanges = []profile.PausedRange{{Start: 0, End: 2e6, Reason: profile.PausedByProfiler}, {Start: 5e6, End: -1}}
	f.Add(encode(f, paused))
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := Read(bytes.NewReader(in))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, p); err != nil {
			// Read keeps categories in range, so Write must accept.
			t.Fatalf("writing what was read: %v", err)
		}
		if _, err := Read(&buf); err != nil {
			t.Fatalf("reading what was written: %v", err)
		}
	})
}
