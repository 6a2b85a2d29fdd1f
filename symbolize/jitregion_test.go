package symbolize

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// jitProcess is a node process (by its binary's lib) with JIT code in two
// anonymous mappings, as record makes them, and samples at addrs.
func jitProcess(pid int, name string, addrs ...uint64) *profile.Process {
	key := profile.PerfMapKey(pid)
	anon := func(start, end uint64) profile.Lib {
		return profile.Lib{Start: start, End: end, Offset: start, Name: "[anon]", Path: "[anon]", DebugName: key.DebugName, DebugPath: PerfMapPath(pid), BreakpadID: key.BreakpadID}
	}
	pr := &profile.Process{Pid: pid, Name: name, Libs: []profile.Lib{
		{Start: 0x400000, End: 0x500000, Name: name, Path: "/usr/bin/" + name, DebugName: name, BreakpadID: "0"},
		anon(0x7f0000000000, 0x7f0000040000),
		anon(0x7f0000100000, 0x7f0000140000),
	}}
	th := &profile.Thread{Tid: pid}
	for i, a := range addrs {
		th.Samples.Add(th.InternStack([]profile.Frame{{Address: a, Category: profile.CategoryUser}}), int64(i), -1)
	}
	pr.Threads = []*profile.Thread{th}
	return pr
}

// JIT code that neither a jitdump nor a perf map names is one function
// per runtime, "[JIT] node", with its mapping's bounds: issue 29's node
// program without flags showed one row per instruction ("[anon]+0x7f..."),
// 4 of its top 15. What a perf map names keeps its name.
func TestJITRegions(t *testing.T) {
	pm, err := ParsePerfMap(strings.NewReader("7f0000000100 40 JS:*work hot.js:3\n"))
	if err != nil {
		t.Fatal(err)
	}
	const named, a1, a2, b1, outside = 0x7f0000000110, 0x7f0000000200, 0x7f0000000300, 0x7f0000100010, 0x7f0000200000
	p := &profile.Profile{Processes: []*profile.Process{jitProcess(4242, "node", named, a1, a2, b1, outside)}}
	st, err := Profile(p, Options{PerfMaps: map[int]*PerfMap{4242: pm}, JITDumps: map[int]JITDump{4242: {}}})
	if err != nil {
		t.Fatal(err)
	}
	key := profile.PerfMapKey(4242)
	for _, c := range []struct {
		addr uint64
		want []profile.SymbolFrame
	}{
		{named, []profile.SymbolFrame{{Function: "JS:*work hot.js:3", FuncAddr: 0x7f0000000100, FuncSize: 0x40}}},
		{a1, []profile.SymbolFrame{{Function: "[JIT] node", FuncAddr: 0x7f0000000000, FuncSize: 0x40000}}},
		{a2, []profile.SymbolFrame{{Function: "[JIT] node", FuncAddr: 0x7f0000000000, FuncSize: 0x40000}}},
		{b1, []profile.SymbolFrame{{Function: "[JIT] node", FuncAddr: 0x7f0000100000, FuncSize: 0x40000}}},
		// Outside every mapping: nothing to name it by.
		{outside, nil},
	} {
		if got := p.Symbols.Lookup(key, c.addr); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%#x: %+v, want %+v", c.addr, got, c.want)
		}
	}
	if st.Resolved != 1 || st.Regions != 3 || st.Unresolved != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestJITRuntime(t *testing.T) {
	for _, c := range []struct {
		pr   *profile.Process
		want string
	}{
		{&profile.Process{Name: "node"}, "node"},
		{&profile.Process{Name: "java", Libs: []profile.Lib{{Name: "libjvm.so"}}}, "java"},
		{&profile.Process{Name: "Main", Libs: []profile.Lib{{Name: "libjvm.so"}}}, "java"},
		{&profile.Process{Name: "myapp", Libs: []profile.Lib{{Name: "libcoreclr.so"}}}, "dotnet"},
		{&profile.Process{Name: "python3.12"}, "python"},
		{&profile.Process{Name: "luajit"}, "luajit"},
		{&profile.Process{}, "anonymous memory"},
	} {
		if got := JITRuntime(c.pr); got != c.want {
			t.Errorf("%+v: %q, want %q", c.pr, got, c.want)
		}
		if h := PerfMapHint(c.want); !strings.Contains(h, "names it") {
			t.Errorf("hint for %s: %q", c.want, h)
		}
	}
}
