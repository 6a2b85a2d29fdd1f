// Package synth builds synthetic profiles for the format packages' tests
// and benchmarks, so that writers of different formats are measured on the
// same input.
package synth

import (
	"math/rand"
	"strconv"
	"sync"

	"github.com/gprof-dev/gprof/profile"
)

var (
	bigOnce    sync.Once
	bigProfile *profile.Profile
)

// Big returns a profile of 8 threads × 600k samples drawn with a skew from
// 20k distinct stacks per thread, 8 to 32 frames deep, over 5000
// symbolicated functions, every fifth with an inlined callee. It is built
// once, the same every time, and shared: callers must not change it.
func Big() *profile.Profile {
	bigOnce.Do(func() {
		const (
			threads = 8
			samples = 600_000
			stacks  = 20_000
			funcs   = 5000
		)
		rng := rand.New(rand.NewSource(1))
		key := profile.LibKey{DebugName: "big", BreakpadID: "B16"}
		lib := profile.Lib{Start: 0x400000, End: 0x400000 + funcs*256, Name: "big", DebugName: key.DebugName, BreakpadID: key.BreakpadID}
		st := &profile.SymbolTable{}
		pr := &profile.Process{Pid: 1, Name: "big", End: -1, Libs: []profile.Lib{lib}}
		names := make([]string, funcs)
		for i := range names {
			names[i] = "namespace::function_" + string(rune('a'+i%26)) + "_" + strconv.Itoa(i)
		}
		addr := func() uint64 {
			// Skew toward low function numbers, as real profiles are.
			f := uint64(rng.ExpFloat64()*funcs/8) % funcs
			rel := f*256 + uint64(rng.Intn(16))*8
			sf := []profile.SymbolFrame{{Function: names[f], FuncAddr: f * 256, FuncSize: 256, File: "src/file" + strconv.Itoa(int(f/50)) + ".cc", Line: int(rel % 97)}}
			if f%5 == 0 {
				sf = append(sf, profile.SymbolFrame{Function: names[(f+1)%funcs] + "_inl", File: "include/x.h", Line: 12})
			}
			st.Add(key, rel, sf)
			return lib.Start + rel
		}
		for t := 0; t < threads; t++ {
			th := &profile.Thread{Tid: 1 + t, Name: "worker", Main: t == 0, End: -1}
			pool := make([]int32, stacks)
			for i := range pool {
				depth := 8 + rng.Intn(25)
				fs := make([]profile.Frame, depth)
				for d := range fs {
					fs[d] = profile.Frame{Address: addr(), Category: profile.CategoryUser}
				}
				pool[i] = th.InternStack(fs)
			}
			th.Samples.Stack = make([]int32, 0, samples)
			th.Samples.Time = make([]int64, 0, samples)
			th.Samples.CPUDelta = make([]int64, 0, samples)
			for i := 0; i < samples; i++ {
				s := pool[int(rng.ExpFloat64()*stacks/10)%stacks]
				th.Samples.Add(s, int64(i)*1e6, 1e6-int64(rng.Intn(1000)))
			}
			pr.Threads = append(pr.Threads, th)
		}
		bigProfile = &profile.Profile{Meta: profile.Meta{Product: "bench", Interval: 1e6, Duration: samples * 1e6}, Processes: []*profile.Process{pr}, Symbols: st}
	})
	return bigProfile
}
