// Command synth writes a large, realistic gprof profile without recording
// one: a long multi-threaded run's worth of samples whose stacks are made of
// real functions of a real binary, so that 'gprof symbolicate', 'convert'
// and 'report' do their real work on it (ELF and DWARF lookups included).
//
// Shape: THREADS threads of SAMPLES samples each at 1 kHz; per thread a call
// tree of LEAVES distinct leaf stacks, 8 to 60 frames deep, grown from one
// another so they share prefixes the way real call trees do; frames drawn
// from FUNCS functions of the binary; sample stacks drawn with a Zipf skew
// toward a few hot stacks.
//
//	go run ./bench/synth -bin bin/gprof -threads 8 -samples 600000 -o big.json.gz
package main

import (
	"cmp"
	"debug/elf"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/symbolize"
)

func main() {
	bin := flag.String("bin", "bin/gprof", "real `ELF` binary whose functions make up the stacks")
	threads := flag.Int("threads", 8, "threads")
	samples := flag.Int("samples", 600_000, "samples per thread (1 kHz: 600,000 is 10 minutes)")
	leaves := flag.Int("leaves", 20_000, "distinct leaf stacks per thread")
	funcs := flag.Int("funcs", 4000, "distinct functions used")
	out := flag.String("o", "big.json.gz", "output `FILE`")
	flag.Parse()
	if err := run(*bin, *threads, *samples, *leaves, *funcs, *out); err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		os.Exit(1)
	}
}

type fn struct{ addr, size uint64 }

func run(path string, threads, samples, leaves, nfuncs int, out string) error {
	b, err := symbolize.Open(path)
	if err != nil {
		return err
	}
	id := b.Identity()
	// The fixture keeps STT_FUNC symbols only, which objfile's neutral
	// Symbols (with untyped code labels and IFUNCs) would change.
	f := b.Object().ELF()
	syms, err := f.Symbols()
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	var fns []fn
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size >= 16 && s.Value != 0 {
			fns = append(fns, fn{s.Value, s.Size})
		}
	}
	if len(fns) < 100 {
		return fmt.Errorf("%s: only %d functions with sizes", path, len(fns))
	}
	slices.SortFunc(fns, func(a, b fn) int { return cmp.Compare(a.addr, b.addr) })
	fns = slices.CompactFunc(fns, func(a, b fn) bool { return a.addr == b.addr })
	rng := rand.New(rand.NewPCG(7, 11))
	rng.Shuffle(len(fns), func(i, j int) { fns[i], fns[j] = fns[j], fns[i] })
	fns = fns[:min(nfuncs, len(fns))]

	// Map the binary the way the loader would: ET_EXEC at its link
	// addresses, ET_DYN at a typical PIE base.
	var bias uint64
	if f.Type == elf.ET_DYN {
		bias = 0x5555_5555_0000
	}
	var lo, hi uint64 = ^uint64(0), 0
	for _, p := range b.Object().Segments() {
		lo, hi = min(lo, p.Addr), max(hi, p.Addr+p.Size)
	}
	lib := profile.Lib{
		Start: bias + lo, End: bias + hi, Offset: 0,
		Name: id.DebugName, Path: path, DebugName: id.DebugName, DebugPath: id.DebugPath,
		BreakpadID: id.BreakpadID, CodeID: id.CodeID, Arch: id.Arch,
	}
	if lib.BreakpadID == "" {
		lib.BreakpadID = "000000000000000000000000000000000"
	}
	// Each function has a few call sites (return addresses) and hot spots.
	frameIn := func(fi int) profile.Frame {
		fu := fns[fi]
		// Within the first half: symbol sizes include alignment padding,
		// which no real sample hits (and which gprof symbolicates with
		// line -1, a profile its own reader then rejects).
		off := 1 + (uint64(fi)*2654435761+uint64(rng.IntN(6))*0x1f)%(fu.size/2)
		return profile.Frame{Address: bias + fu.addr + off, Category: profile.CategoryUser}
	}

	const interval = int64(time.Millisecond)
	dur := int64(samples)*interval + interval
	p := &profile.Profile{Meta: profile.Meta{
		Product: "gprof", StartTime: time.Now().Add(-time.Duration(dur)), Interval: time.Millisecond,
		OSCPU: "Linux synthetic", Platform: "Linux", Arch: "x86_64", LogicalCPUs: threads,
		Duration: dur, Extra: map[string]string{"backend": "synthetic", "event": "cpu-clock"},
	}}
	proc := &profile.Process{Pid: 4242, Name: "synth", End: dur, ExitCode: 0, Libs: []profile.Lib{lib}}
	p.Processes = []*profile.Process{proc}
	zipf := rand.NewZipf(rng, 1.1, 4, uint64(leaves-1))
	for ti := 0; ti < threads; ti++ {
		th := &profile.Thread{Tid: 4242 + ti, Name: fmt.Sprintf("worker-%d", ti), Main: ti == 0, End: dur}
		var trees [][]profile.Frame // root first
		stacks := make([]int32, leaves)
		for i := range stacks {
			var fr []profile.Frame
			if i < 32 {
				for d := 8 + rng.IntN(24); d > 0; d-- {
					fr = append(fr, frameIn(rng.IntN(len(fns))))
				}
			} else {
				from := trees[rng.IntN(len(trees))]
				fr = append(fr, from[:max(1, len(from)-rng.IntN(12))]...)
				for g := rng.IntN(12); g > 0 && len(fr) < 60; g-- {
					fr = append(fr, frameIn(rng.IntN(len(fns))))
				}
			}
			trees = append(trees, fr)
			leafFirst := slices.Clone(fr)
			slices.Reverse(leafFirst)
			stacks[i] = th.InternStack(leafFirst)
		}
		t := int64(rng.IntN(int(interval)))
		for i := 0; i < samples; i++ {
			t += interval - 20_000 + int64(rng.IntN(40_000))
			th.Samples.Add(stacks[zipf.Uint64()], t, interval-int64(rng.IntN(50_000)))
		}
		proc.Threads = append(proc.Threads, th)
	}
	return gecko.WriteFile(out, p)
}
