package processed

import (
	"io"
	"testing"

	"github.com/gprof-dev/gprof/internal/synth"
)

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func BenchmarkWrite(b *testing.B) {
	p := synth.Big()
	b.ReportAllocs()
	b.ResetTimer()
	var n int64
	for i := 0; i < b.N; i++ {
		var cw countWriter
		if err := Write(&cw, p); err != nil {
			b.Fatal(err)
		}
		n = cw.n
	}
	b.ReportMetric(float64(n)/1e6, "MB-out")
}

func BenchmarkRead(b *testing.B) {
	p := synth.Big()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(Write(pw, p)) }()
	data, err := io.ReadAll(pr)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Read(bytesReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func bytesReader(b []byte) io.Reader { return &sliceReader{b: b} }

type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
