package processed

import (
	"bytes"
	"compress/gzip"
	"strconv"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

func readTest(t *testing.T, b []byte) *profile.Profile {
	t.Helper()
	p, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// resolve renders each sample of th as "outer>inline;caller>..." leaf
// first, using the profile's symbols with the package's lookup rules, so
// models with different addresses can be compared by meaning.
func resolve(p *profile.Profile, pr *profile.Process, th *profile.Thread) []string {
	b := &builder{p: p}
	b.kernKey, b.kernOK = p.Symbols.KernelLib()
	libs, _ := sortedLibs(pr)
	var out []string
	for _, s := range th.Samples.Stack {
		var parts []string
		caller := false
		for ; s != profile.NoStack; s = th.Stacks.Prefix[s] {
			f := th.Frames.Frames[th.Stacks.Frame[s]]
			var name string
			switch {
			case f.Label != "":
				name = f.Label
			case b.isKernel(libs, f):
				var fs []string
				for _, sf := range p.Symbols.LookupFrame(b.kernKey, f.Address, caller) {
					fs = append(fs, sf.Function+"@"+sf.File+":"+itoa(sf.Line))
				}
				name = "kernel[" + strings.Join(fs, ">") + "]"
			case profile.FindLib(libs, f.Address) != nil:
				l := profile.FindLib(libs, f.Address)
				var fs []string
				for _, sf := range p.Symbols.LookupFrame(l.Key(), l.Rel(f.Address), caller) {
					fs = append(fs, sf.Function+"@"+sf.File+":"+itoa(sf.Line))
				}
				name = l.Name + "[" + strings.Join(fs, ">") + "]"
			default:
				name = "?"
			}
			parts = append(parts, name)
			caller = true
		}
		out = append(out, strings.Join(parts, ";"))
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestRoundTrip(t *testing.T) {
	orig := testProfile()
	first := writeTest(t, orig)
	p := readTest(t, first)

	if len(p.Processes) != 2 {
		t.Fatalf("%d processes, want 2", len(p.Processes))
	}
	if p.Meta.Product != "gprof" || p.Meta.Interval != orig.Meta.Interval || !p.Meta.StartTime.Equal(orig.Meta.StartTime) ||
		p.Meta.Duration != orig.Meta.Duration || p.Meta.LostEvents != 3 || p.Meta.Extra["backend"] != "perf" || p.Meta.Arch != "x86_64" {
		t.Errorf("meta = %+v", p.Meta)
	}
	for i, pr := range p.Processes {
		opr := orig.Processes[i]
		if pr.Pid != opr.Pid || pr.Name != opr.Name || pr.Start != opr.Start || pr.End != opr.End {
			t.Errorf("process %d = %d %q %d %d", i, pr.Pid, pr.Name, pr.Start, pr.End)
		}
		for j, th := range pr.Threads {
			oth := opr.Threads[j]
			if th.Tid != oth.Tid || th.Main != oth.Main || th.Start != oth.Start || th.End != oth.End {
				t.Errorf("thread %d/%d = %+v", i, j, th)
			}
			if !equal(th.Samples.Time, oth.Samples.Time) || !equal(th.Samples.CPUDelta, oth.Samples.CPUDelta) {
				t.Errorf("thread %d: samples %v %v", th.Tid, th.Samples.Time, th.Samples.CPUDelta)
			}
			got, want := resolve(p, pr, th), resolve(orig, opr, oth)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("thread %d stacks:\n got %q\nwant %q", th.Tid, got, want)
			}
			if len(th.Markers) != len(oth.Markers) || len(th.Markers) > 0 && (th.Markers[0].Name != oth.Markers[0].Name || th.Markers[0].Data != nil) {
				t.Errorf("thread %d markers %+v", th.Tid, th.Markers)
			}
		}
	}

	// A caller's frame gets its raw return address back; its symbols are
	// where they were looked up, inside the call, and read as a caller's.
	main := p.Processes[0].Threads[0]
	root := main.Frames.Frames[main.Stacks.Frame[0]]
	var app *profile.Lib
	for i := range p.Processes[0].Libs {
		if p.Processes[0].Libs[i].Name == "app" {
			app = &p.Processes[0].Libs[i]
		}
	}
	if app == nil || root.Address-app.Start != 0x2050 {
		t.Fatalf("root frame %#x in app %+v, want app+0x2050", root.Address, app)
	}
	got := p.Symbols.LookupFrame(appKey, 0x2050, true)
	want := []profile.SymbolFrame{{Function: "main", FuncAddr: 0x2000, FuncSize: 0x100, File: "main.c", Line: 10}, {Function: "helper", File: "helper.h", Line: 20}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("symbols at app+0x2050 = %+v", got)
	}
	// The leaf at the same address as a caller keeps its own line.
	if s := p.Symbols.Lookup(appKey, 0x3020); len(s) != 1 || s[0].Line != 7 {
		t.Errorf("symbols at app+0x3020 = %+v", s)
	}
	for i := 1; i < len(p.Processes[0].Libs); i++ {
		if p.Processes[0].Libs[i].Start < p.Processes[0].Libs[i-1].End {
			t.Errorf("synthetic libs overlap")
		}
	}

	// Writing what was read reproduces the first output, the name of the
	// unsymbolicated frame too: it is library-relative, "app+0x5000", the
	// same wherever the library was mapped.
	second := writeTest(t, p)
	if a, b := string(first), string(second); a != b {
		t.Errorf("second write differs:\n%s\n%s", a, b)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// v56 is a hand-written version-56 profile: per-thread tables, a prefix
// column, func fileName, resourceTable.lib, absolute sample times and a
// numeric tid. Stack 1 is "inl" inlined into "outer" at address 31, which
// calls "leaf" at 80 (stack 2) and is itself sampled as a leaf.
const v56 = `{"meta":{"version":27,"preprocessedProfileVersion":56,"interval":0.5,"startTime":1000,"product":"Firefox",
"processType":0,"stackwalk":1,"markerSchema":[],"categories":[{"name":"Other","color":"grey","subcategories":["Other"]}],
"sampleUnits":{"time":"ms","eventDelay":"ms","threadCPUDelta":"ns"}},
"libs":[{"arch":"x86_64","name":"libxul.so","path":"/x/libxul.so","debugName":"libxul.so","debugPath":"/x/libxul.so","breakpadId":"B1","codeId":null}],
"shared":{"stringArray":["outer","a.cpp","inl","b.h","leaf","GeckoMain","libxul.so","Paint"]},
"threads":[{"name":"GeckoMain","processName":"firefox","pid":"42","tid":42,"isMainThread":true,"processType":"default",
"processStartupTime":0,"processShutdownTime":null,"registerTime":0,"unregisterTime":null,"pausedRanges":[],
"stackTable":{"length":3,"frame":[0,1,2],"prefix":[null,0,1]},
"frameTable":{"length":3,"address":[31,31,80],"inlineDepth":[0,1,0],"category":[0,0,0],"subcategory":[0,0,0],"func":[0,1,2],
 "nativeSymbol":[0,0,1],"innerWindowID":[0,0,0],"implementation":[null,null,null],"line":[12,34,56],"column":[null,null,null]},
"funcTable":{"length":3,"name":[0,2,4],"isJS":[false,false,false],"relevantForJS":[false,false,false],"resource":[0,0,0],
 "fileName":[1,3,null],"lineNumber":[null,null,null],"columnNumber":[null,null,null]},
"resourceTable":{"length":1,"lib":[0],"name":[6],"host":[null],"type":[1]},
"nativeSymbols":{"length":2,"libIndex":[0,0],"address":[16,64],"name":[0,4],"functionSize":[32,null]},
"samples":{"length":2,"stack":[2,1],"time":[1.5,2],"weight":null,"weightType":"samples","threadCPUDelta":[null,700]},
"markers":{"length":1,"name":[7],"startTime":[1],"endTime":[1.25],"phase":[1],"category":[0],"data":[{"type":"Paint","x":1}]}}]}`

func TestReadVersion56(t *testing.T) {
	p := readTest(t, []byte(v56))
	if len(p.Processes) != 1 || p.Processes[0].Pid != 42 || p.Processes[0].Name != "firefox" {
		t.Fatalf("processes %+v", p.Processes)
	}
	pr := p.Processes[0]
	th := pr.Threads[0]
	if !equal(th.Samples.Time, []int64{1.5e6, 2e6}) || !equal(th.Samples.CPUDelta, []int64{-1, 700}) {
		t.Errorf("samples %v %v", th.Samples.Time, th.Samples.CPUDelta)
	}
	got := resolve(p, pr, th)
	want := []string{
		"libxul.so[leaf@:56];libxul.so[outer@a.cpp:12>inl@b.h:34]",
		"libxul.so[outer@a.cpp:12>inl@b.h:34]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stacks:\n got %q\nwant %q", got, want)
	}
	// Stack 1 is both a caller (nudged address 31, raw 32) and a leaf
	// (raw 31): two model frames, the leaf role made first.
	l := pr.Libs[0]
	var addrs []uint64
	for _, f := range th.Frames.Frames {
		addrs = append(addrs, f.Address-l.Start)
	}
	if len(addrs) != 3 || addrs[0] != 31 || addrs[1] != 32 || addrs[2] != 80 {
		t.Errorf("frame addresses %v, want [31 32 80]", addrs)
	}
	if s := p.Symbols.LookupFrame(profile.LibKey{DebugName: "libxul.so", BreakpadID: "B1"}, 32, true); len(s) != 2 || s[0].FuncAddr != 16 || s[0].FuncSize != 32 {
		t.Errorf("symbols %+v", s)
	}
	if m := th.Markers; len(m) != 1 || m[0].Name != "Paint" || m[0].Start != 1e6 || m[0].End != 1.25e6 || m[0].Data["x"] != 1.0 {
		t.Errorf("markers %+v", m)
	}
}

func TestReadVersion70(t *testing.T) {
	// Version 70: shared tables, prefixOffset, sources, frameTable.lib and
	// no resourceTable.lib; a JS-style label frame and an unknown address.
	const v70 = `{"meta":{"version":27,"preprocessedProfileVersion":70,"interval":1,"startTime":0,"product":"x","markerSchema":[]},
"libs":[{"arch":"","name":"l","path":"l","debugName":"l","debugPath":"l","breakpadId":"ID","codeId":"c0de"}],
"shared":{"stringArray":["f","f.c","onClick","0x1234"],
"stackTable":{"length":3,"frame":[1,0,2],"prefixOffset":[0,1,1]},
"frameTable":{"length":3,"address":[9,-1,-1],"lib":[0,-1,-1],"inlineDepth":[0,0,0],"category":[0,0,0],"subcategory":[0,0,0],"func":[0,1,2],
 "nativeSymbol":[0,null,null],"innerWindowID":[0,0,0],"line":[3,null,null],"column":[null,null,null],"originalLocation":[null,null,null]},
"funcTable":{"length":3,"name":[0,2,3],"isJS":[false,true,false],"relevantForJS":[false,false,false],"resource":[0,-1,-1],"source":[0,null,null],
 "lineNumber":[null,null,null],"columnNumber":[null,null,null],"originalLocation":[null,null,null]},
"resourceTable":{"length":1,"name":[0],"host":[null],"type":[1]},
"nativeSymbols":{"length":1,"libIndex":[0],"address":[8],"name":[0],"functionSize":[null]},
"sources":{"length":1,"id":[null],"filename":[1],"startLine":[1],"startColumn":[1],"sourceMapURL":[null],"content":[null]},
"sourceLocationTable":{"length":0,"source":[],"line":[],"column":[]}},
"threads":[{"name":"t","pid":"x7","tid":"8","isMainThread":false,"processStartupTime":0,"processShutdownTime":null,"registerTime":0,"unregisterTime":null,
"pausedRanges":[],"samples":{"length":3,"stack":[0,1,2],"timeDeltas":[1,1,1],"weight":[1,2,3],"weightType":"samples"},
"markers":{"length":0,"name":[],"startTime":[],"endTime":[],"phase":[],"category":[],"data":[]}}]}`
	p := readTest(t, []byte(v70))
	pr := p.Processes[0]
	th := pr.Threads[0]
	if pr.Pid != -1 || th.Tid != 8 || th.Samples.Weight[2] != 3 || th.Samples.CPUDelta[0] != -1 {
		t.Errorf("pid %d tid %d weights %v cpu %v", pr.Pid, th.Tid, th.Samples.Weight, th.Samples.CPUDelta)
	}
	got := resolve(p, pr, th)
	want := []string{"onClick", "l[f@f.c:3];onClick", "?;l[f@f.c:3];onClick"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stacks:\n got %q\nwant %q", got, want)
	}
	if f := th.Frames.Frames[th.Stacks.Frame[th.Samples.Stack[2]]]; f.Address != 0x1234 || f.Label != "" {
		t.Errorf("unknown frame %+v", f)
	}
	if pr.Libs[0].CodeID != "c0de" {
		t.Errorf("lib %+v", pr.Libs[0])
	}
}

func TestReadErrors(t *testing.T) {
	good := writeTest(t, testProfile())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(good)
	zw.Close()
	for name, c := range map[string]struct {
		in, want string
	}{
		"empty":          {"", "empty"},
		"not json":       {"hello", "not a JSON object"},
		"array":          {"[1,2]", "not a JSON object"},
		"truncated":      {string(good[:len(good)/2]), "truncated"},
		"truncated gzip": {gz.String()[:gz.Len()/2], "truncated"},
		"no meta":        {`{"threads":[]}`, `no "meta"`},
		"gecko":          {`{"meta":{"version":27},"threads":[]}`, "Gecko profile"},
		"too new":        {`{"meta":{"preprocessedProfileVersion":71}}`, "newer"},
		"too old":        {`{"meta":{"preprocessedProfileVersion":30}}`, "older"},
		"stack range":    {strings.Replace(string(good), `"stack":[2,3,5,7,null]`, `"stack":[2,3,5,70,null]`, 1), "out of range"},
		"frame range":    {strings.Replace(string(good), `"frame":[0,1,2,3`, `"frame":[0,1,20,3`, 1), "out of range"},
		"prefix":         {strings.Replace(string(good), `"prefixOffset":[0,1,1`, `"prefixOffset":[0,1,9`, 1), "prefixOffset"},
		"length":         {strings.Replace(string(good), `"timeDeltas":[1,1,1,1,1]`, `"timeDeltas":[1,1]`, 1), "differ in length"},
		"bad column":     {strings.Replace(string(good), `"timeDeltas":[1,1,1,1,1]`, `"timeDeltas":[1,"x",1,1,1]`, 1), "processed profile"},
		"no tables":      {`{"meta":{"preprocessedProfileVersion":66},"threads":[{"samples":{"stack":[]}}]}`, "no stack table"},
	} {
		_, err := Read(strings.NewReader(c.in))
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "processed profile: ") {
			t.Errorf("%s: error %q, want one line containing %q", name, msg, c.want)
		}
	}
}

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, testProfile())
	f.Add(buf.Bytes())
	// With paused ranges (record -D, --control), one still open.
	paused := testProfile()
	paused.Meta.PausedRanges = []profile.PausedRange{{Start: 0, End: 2e6, Reason: profile.PausedByProfiler}, {Start: 5e6, End: -1}}
	var pbuf bytes.Buffer
	Write(&pbuf, paused)
	f.Add(pbuf.Bytes())
	f.Add([]byte(v56))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Read(bytes.NewReader(b))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		// Whatever reads must write.
		if err := Write(&bytes.Buffer{}, p); err != nil {
			t.Fatalf("read profile does not write: %v", err)
		}
	})
}

// TestDataStart checks that where a bounded recording's data starts
// reaches meta.profilingStartTime, which starts the front-end's timeline,
// and reads back.
func TestDataStart(t *testing.T) {
	orig := testProfile()
	orig.Meta.DataStart = 2_500_000
	data := writeTest(t, orig)
	if !strings.Contains(string(data), `"profilingStartTime":2.5,"profilingEndTime":10,`) {
		t.Errorf("meta lacks profilingStartTime 2.5: %.400s", data)
	}
	p := readTest(t, data)
	if p.Meta.DataStart != orig.Meta.DataStart || p.Meta.Duration != orig.Meta.Duration {
		t.Errorf("read back DataStart %d, Duration %d", p.Meta.DataStart, p.Meta.Duration)
	}
}

// TestReadFrontEndEmptySubprocessThread: the front-end shifts a
// subprocess's samples by adding to timeDeltas[0], which for a child
// process that got no sample leaves a timeDeltas of one null in a table
// of length 0; profiles it saves from gprof's Gecko output have one per
// such process, and they must read.
func TestReadFrontEndEmptySubprocessThread(t *testing.T) {
	p := &profile.Profile{Meta: profile.Meta{Interval: 1e6}, Processes: []*profile.Process{
		{Pid: 1, Name: "sh", End: -1, Threads: []*profile.Thread{{Tid: 1, Main: true, End: -1}}},
	}}
	th := p.Processes[0].Threads[0]
	th.Samples.Add(th.InternStack([]profile.Frame{{Label: "x"}}), 1e6, -1)
	p.Processes = append(p.Processes, &profile.Process{Pid: 2, Name: "idle", End: -1, Threads: []*profile.Thread{{Tid: 2, Main: true, End: -1}}})
	out := string(writeTest(t, p))
	if strings.Count(out, `"timeDeltas":[]`) != 1 {
		t.Fatalf("want one empty timeDeltas in %s", out)
	}
	got := readTest(t, []byte(strings.Replace(out, `"timeDeltas":[]`, `"timeDeltas":[null]`, 1)))
	if len(got.Processes) != 2 || got.Processes[1].Threads[0].Samples.Len() != 0 {
		t.Errorf("processes %+v", got.Processes)
	}
}
