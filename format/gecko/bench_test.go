package gecko

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/profile"
	"github.com/klauspost/compress/gzip"
)

// bigProfile is a recording the size of a long multi-threaded run: 8
// threads of 600,000 samples, stacks 10 to 60 frames deep drawn from a few
// thousand functions, some 20,000 distinct leaf stacks per thread, and
// samples skewed toward a few hot stacks.
var bigProfile = sync.OnceValue(func() *profile.Profile {
	const (
		threads  = 8
		samples  = 600_000
		leaves   = 20_000
		libStart = 0x5555_0000_0000
	)
	rng := rand.New(rand.NewPCG(1, 2))
	p := &profile.Profile{Meta: profile.Meta{Product: "gprof", StartTime: time.Unix(1700000000, 0), Interval: time.Millisecond}}
	proc := &profile.Process{Pid: 1000, Name: "big", End: -1, ExitCode: -1, Libs: []profile.Lib{{
		Start: libStart, End: libStart + 0x100_0000, Name: "big", Path: "/bin/big",
		DebugName: "big", BreakpadID: "00000000000000000000000000000000A", Arch: "x86_64",
	}}}
	p.Processes = []*profile.Process{proc}
	zipf := rand.NewZipf(rng, 1.1, 4, leaves-1)
	for ti := 0; ti < threads; ti++ {
		th := &profile.Thread{Tid: 1000 + ti, Name: "worker", Main: ti == 0, End: -1}
		// Leaf stacks share prefixes the way real call trees do: each new
		// one is an earlier one cut a few frames short and grown again.
		var leafFrames [][]profile.Frame
		stacks := make([]int32, leaves)
		for i := range stacks {
			var frames []profile.Frame
			if i < 16 {
				for d := 0; d < 10+rng.IntN(30); d++ {
					frames = append(frames, randFrame(rng))
				}
			} else {
				from := leafFrames[rng.IntN(len(leafFrames))]
				cut := max(1, len(from)-rng.IntN(10))
				frames = append(frames, from[:cut]...)
				for grow := rng.IntN(10); grow > 0 && len(frames) < 80; grow-- {
					frames = append(frames, randFrame(rng))
				}
			}
			leafFrames = append(leafFrames, frames)
			// InternStack wants the leaf first.
			leafFirst := slices.Clone(frames)
			slices.Reverse(leafFirst)
			stacks[i] = th.InternStack(leafFirst)
		}
		t := int64(0)
		for i := 0; i < samples; i++ {
			t += 1_000_000 + int64(rng.IntN(20_000))
			th.Samples.Add(stacks[zipf.Uint64()], t, int64(900_000+rng.IntN(100_000)))
		}
		proc.Threads = append(proc.Threads, th)
		if testing.Verbose() && ti == 0 {
			fmt.Printf("bigProfile: %d frames, %d stacks per thread\n", th.Frames.Len(), th.Stacks.Len())
		}
	}
	p.Meta.Duration = 700_000_000_000
	return p
})

func randFrame(rng *rand.Rand) profile.Frame {
	const libStart = 0x5555_0000_0000
	fn := uint64(rng.IntN(4000))
	return profile.Frame{Address: libStart + fn*0x400 + uint64(rng.IntN(8))*4, Category: profile.CategoryUser}
}

// peakHeap tracks the largest live heap seen while it runs.
type peakHeap struct {
	stop chan struct{}
	done chan uint64
}

func startPeak() *peakHeap {
	runtime.GC()
	ph := &peakHeap{stop: make(chan struct{}), done: make(chan uint64)}
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-ph.stop:
				ph.done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return ph
}

func (ph *peakHeap) end() uint64 { close(ph.stop); return <-ph.done }

func heapNow() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func BenchmarkWrite(b *testing.B) {
	p := bigProfile()
	var n int64
	cw := &countWriter{}
	if err := Write(cw, p); err != nil {
		b.Fatal(err)
	}
	n = cw.n
	b.SetBytes(n)
	base := heapNow()
	ph := startPeak()
	b.ResetTimer()
	for b.Loop() {
		if err := Write(io.Discard, p); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(ph.end()-base)/1e6, "peak-extra-heap-MB")
	b.ReportMetric(float64(n)/1e6, "output-MB")
}

func BenchmarkWriteGzip(b *testing.B) {
	p := bigProfile()
	cw := &countWriter{}
	if err := Write(cw, p); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(cw.n) // throughput of JSON produced
	var zn int64
	for b.Loop() {
		zc := &countWriter{}
		if err := WriteGzip(zc, p); err != nil {
			b.Fatal(err)
		}
		zn = zc.n
	}
	b.ReportMetric(float64(zn)/1e6, "gzip-MB")
}

func BenchmarkRead(b *testing.B) {
	var buf bytes.Buffer
	if err := Write(&buf, bigProfile()); err != nil {
		b.Fatal(err)
	}
	benchRead(b, buf.Bytes(), int64(buf.Len()))
}

func BenchmarkReadGzip(b *testing.B) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err := Write(zw, bigProfile()); err != nil {
		b.Fatal(err)
	}
	zw.Close()
	cw := &countWriter{}
	Write(cw, bigProfile())
	benchRead(b, buf.Bytes(), cw.n)
}

func benchRead(b *testing.B, data []byte, jsonBytes int64) {
	b.SetBytes(jsonBytes)
	b.ReportAllocs()
	base := heapNow()
	ph := startPeak()
	var p *profile.Profile
	b.ResetTimer()
	for b.Loop() {
		p = nil
		var err error
		if p, err = Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	peak := ph.end()
	b.ReportMetric(float64(peak-base)/1e6, "peak-extra-heap-MB")
	b.ReportMetric(float64(int64(heapNow())-int64(base))/1e6, "result-heap-MB")
	runtime.KeepAlive(p)
	runtime.KeepAlive(data)
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(b []byte) (int, error) { w.n += int64(len(b)); return len(b), nil }
