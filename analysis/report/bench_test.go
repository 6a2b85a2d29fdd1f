package report

import (
	"io"
	"testing"

	"github.com/gprof-dev/gprof/internal/synth"
)

func BenchmarkBuild(b *testing.B) {
	p := synth.Big()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := Build(p, Options{})
		if r.Samples != 8*600_000 {
			b.Fatal(r.Samples)
		}
	}
}

func BenchmarkWriteText(b *testing.B) {
	r := Build(synth.Big(), Options{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		WriteText(io.Discard, r)
	}
}
