package record

import (
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/symbolize"
)

// jitProfile is a node process with jit samples in JIT code named only by
// its region and other samples elsewhere.
func jitProfile(jit, other int) *profile.Profile {
	key := profile.PerfMapKey(77)
	pr := &profile.Process{Pid: 77, Name: "node", Libs: []profile.Lib{
		{Start: 0x7f0000000000, End: 0x7f0000100000, Offset: 0x7f0000000000, Name: "[anon]", DebugName: key.DebugName},
	}}
	th := &profile.Thread{Tid: 77}
	in := th.InternStack([]profile.Frame{{Address: 0x7f0000000123, Category: profile.CategoryUser}})
	out := th.InternStack([]profile.Frame{{Label: "elsewhere"}})
	for range jit {
		th.Samples.Add(in, 0, 1e6)
	}
	for range other {
		th.Samples.Add(out, 0, 1e6)
	}
	pr.Threads = []*profile.Thread{th}
	st := &profile.SymbolTable{}
	st.Add(key, 0x7f0000000123, []profile.SymbolFrame{{Function: symbolize.JITPrefix + "node", FuncAddr: 0x7f0000000000, FuncSize: 0x100000}})
	return &profile.Profile{Processes: []*profile.Process{pr}, Symbols: st}
}

// The recording says once how much ran JIT code without names and what
// names it, when that is at least 1% of the samples and 10 of them.
func TestUnnamedJIT(t *testing.T) {
	got := unnamedJIT(jitProfile(463, 1669))
	want := "463 of 2132 samples (21.7%) ran JIT code with no names, shown as [JIT] node (pid 77): node --perf-basic-prof names it"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	for _, c := range [][2]int{{9, 0}, {10, 1000}, {0, 100}} {
		if got := unnamedJIT(jitProfile(c[0], c[1])); got != "" {
			t.Errorf("%d of %d samples: %q", c[0], c[0]+c[1], got)
		}
	}
	if got := unnamedJIT(jitProfile(10, 990)); !strings.HasPrefix(got, "10 of 1000 samples (1.0%)") {
		t.Errorf("1%%: %q", got)
	}
}
