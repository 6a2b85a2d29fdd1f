package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/record"
)

// The live status line says "1 sample", not "1 samples".
func TestStatusLinePlurals(t *testing.T) {
	for _, tc := range []struct {
		p    record.Progress
		want string
	}{
		{record.Progress{Elapsed: time.Second, Samples: 1, Threads: 1}, "1 sample  1 thread"},
		{record.Progress{Elapsed: time.Second, Samples: 2, Threads: 3, Lost: 1}, "2 samples  3 threads  1 lost"},
		{record.Progress{Elapsed: time.Second}, "0 samples  0 threads"},
	} {
		var buf bytes.Buffer
		newStatusLine(&buf).update(tc.p)
		if got := buf.String(); !strings.HasSuffix(got, tc.want) {
			t.Errorf("status line %q, want it to end in %q", got, tc.want)
		}
	}
}
