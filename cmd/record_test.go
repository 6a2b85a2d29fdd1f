package cmd

import (
	"strings"
	"testing"
)

// The summary's sample count is what the file holds; discarded samples
// are said apart, next to it.
func TestRecordSummaryDiscarded(t *testing.T) {
	var b strings.Builder
	printRecordSummary(&b, recordSummary{Output: "p.json.gz", Samples: 2251, Discarded: 17749, Threads: 1, Processes: 1, DurationSec: 20})
	want := "gprof: wrote p.json.gz: 2251 samples (17749 older ones discarded to stay within --max-memory/--keep) from 1 thread in 1 process over 20.00s\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
}
