package format

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
	"time"
)

// readLimit bounds one Reader call in FuzzReader. A reader that loops or
// crawls on some input would otherwise stall the fuzzer silently: the
// fuzzing engine has no per-input timeout, and -fuzztime ends the run with
// PASS.
const readLimit = 10 * time.Second

// FuzzReader checks that no input makes the sniffing reader panic, hang,
// or return an error that spans lines (the CLI prints errors as one line).
// Seeds live in testdata/fuzz/FuzzReader: real gprof output, whole and cut
// short, plain and gzipped, in both formats.
func FuzzReader(f *testing.F) {
	mini := []byte(`{"meta":{"version":36,"startTime":1,"interval":1,"categories":[{"name":"Other","color":"grey"}]},"libs":[],"threads":[],"processes":[]}`)
	f.Add(mini)
	f.Add(gz(mini))
	f.Add(gz(mini[:len(mini)/2]))
	f.Add([]byte(`{"meta":{"preprocessedProfileVersion":66}}`))
	f.Add([]byte{0x1f, 0x8b})
	f.Add([]byte(" \n"))
	// Files that are no profile, which Reader describes (describe,
	// describeJSON).
	f.Add([]byte("garbage line 1\ngarbage line 2\n"))
	f.Add([]byte(`{"foo": 1, "bar": [1, {"meta": 2}]}`))
	f.Add([]byte(`[{"name": "x"}]`))
	f.Add(gz([]byte("hello\n")))
	f.Add([]byte("\x7fELF\x02\x01\x01\x00"))
	f.Add([]byte("\xef\xbb\xbf{\"x\":"))
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	// A gzipped profile cut short within its compressed stream (cutShort).
	if z := gz(mini); len(z) > 8 {
		f.Add(z[:len(z)*2/3])
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		type res struct {
			kind Kind
			err  error
		}
		done := make(chan res, 1)
		go func() {
			_, k, err := Reader(bytes.NewReader(in))
			done <- res{k, err}
		}()
		var r res
		select {
		case r = <-done:
		case <-time.After(readLimit):
			t.Fatalf("Reader did not return within %v on %d bytes", readLimit, len(in))
		}
		if r.err != nil && strings.Contains(r.err.Error(), "\n") {
			t.Fatalf("multi-line error %q", r.err)
		}
		if r.err == nil && r.kind != Gecko && r.kind != Processed {
			t.Fatalf("read without error but kind %q", r.kind)
		}
	})
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}
