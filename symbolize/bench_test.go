package symbolize

import (
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func benchBinaries(b *testing.B) map[string]string {
	bins := map[string]string{"libc": "/usr/lib/x86_64-linux-gnu/libc.so.6"}
	if out, err := exec.Command("go", "env", "GOTOOLDIR").Output(); err == nil {
		bins["compile"] = filepath.Join(strings.TrimSpace(string(out)), "compile")
	}
	return bins
}

// sampleAddrs picks n lib-relative addresses inside b's functions.
func sampleAddrs(tb testing.TB, bin *Binary, n int) []uint64 {
	ix, err := bin.index()
	if err != nil || len(ix.syms) == 0 {
		tb.Skip("no symbols")
	}
	r := rand.New(rand.NewPCG(1, 2))
	addrs := make([]uint64, n)
	for i := range addrs {
		s := ix.syms[r.IntN(len(ix.syms))]
		addrs[i] = s.addr - ix.base + r.Uint64N(max(s.end-s.addr, 1))
	}
	return addrs
}

// BenchmarkIndex measures opening a binary and building its index: the
// symbol tables, the DWARF unit list (which decompresses .debug_*), and
// pclntab.
func BenchmarkIndex(b *testing.B) {
	for name, path := range benchBinaries(b) {
		b.Run(name, func(b *testing.B) {
			systemFile(b, path)
			for b.Loop() {
				bin, err := Open(path)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := bin.index(); err != nil {
					b.Fatal(err)
				}
				bin.Close()
			}
		})
	}
}

// BenchmarkFirstLookups measures 1000 lookups on a fresh index, which
// parse the units they land in.
func BenchmarkFirstLookups(b *testing.B) {
	for name, path := range benchBinaries(b) {
		b.Run(name, func(b *testing.B) {
			systemFile(b, path)
			bin, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			addrs := sampleAddrs(b, bin, 1000)
			bin.Close()
			for b.Loop() {
				b.StopTimer()
				bin, _ := Open(path)
				bin.index()
				b.StartTimer()
				for _, a := range addrs {
					bin.Lookup(a)
				}
				bin.Close()
			}
		})
	}
}

// BenchmarkLookup measures a lookup once the units involved are parsed.
func BenchmarkLookup(b *testing.B) {
	for name, path := range benchBinaries(b) {
		b.Run(name, func(b *testing.B) {
			systemFile(b, path)
			bin, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer bin.Close()
			addrs := sampleAddrs(b, bin, 4096)
			resolved := 0
			for _, a := range addrs {
				if len(bin.Lookup(a)) > 0 {
					resolved++
				}
			}
			b.ReportMetric(float64(resolved)/float64(len(addrs)), "resolved/op")
			i := 0
			for b.Loop() {
				bin.Lookup(addrs[i%len(addrs)])
				i++
			}
		})
	}
}
