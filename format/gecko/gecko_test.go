package gecko

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/profile"
)

// testProfile builds a small profile that exercises every field Write
// stores: two processes, native and label frames, null stacks and CPU
// deltas, all marker phases, weights and stored symbols.
func testProfile() *profile.Profile {
	p := &profile.Profile{
		Meta: profile.Meta{
			Product:     "gprof",
			StartTime:   time.Unix(1700000000, 123456789),
			Interval:    time.Millisecond,
			OSCPU:       "Linux 6.8.0",
			Platform:    "Linux",
			Arch:        "x86_64",
			LogicalCPUs: 16,
			CPUName:     "Test CPU @ 3GHz",
			Duration:    5_000_000_123,
			DataStart:   1_000_007,
			LostEvents:  42,
			Extra:       map[string]string{"backend": "perf", "command": "sleep 1 \"quoted\"\n"},
		},
	}
	exe := profile.Lib{Start: 0x55550000_0000, End: 0x55550000_4000, Offset: 0x1000, Name: "app", Path: "/usr/bin/app",
		DebugName: "app", DebugPath: "/usr/bin/app", BreakpadID: "0123456789ABCDEF0123456789ABCDEF0", CodeID: "efcdab8967452301", Arch: "x86_64"}
	libc := profile.Lib{Start: 0x7f00_0000_0000, End: 0x7f00_0010_0000, Offset: 0x28000, Name: "libc.so.6", Path: "/lib/libc.so.6",
		DebugName: "libc.so.6", DebugPath: "/lib/libc.so.6", BreakpadID: "FEDCBA9876543210FEDCBA98765432100", Arch: "x86_64"}
	kernel := profile.Lib{Start: 0xffffffff_81000000, End: 0xffffffff_83000000, Name: "[kernel.kallsyms]", Path: "[kernel.kallsyms]",
		DebugName: "[kernel.kallsyms]", BreakpadID: "AAAABBBBCCCCDDDDEEEEFFFF000011110", Arch: "x86_64"}

	mk := func(pid int, name string, start, end int64) *profile.Process {
		return &profile.Process{Pid: pid, Name: name, Start: start, End: end, ExitCode: -1,
			Libs: []profile.Lib{exe, libc, kernel}}
	}
	p1 := mk(100, "app", 0, -1)
	p2 := mk(200, "child", 1_500_000_000, 4_000_000_000)
	p2.ExitCode = 3

	addThread := func(proc *profile.Process, tid int, name string, main bool, start, end int64, n int) *profile.Thread {
		th := &profile.Thread{Tid: tid, Name: name, Main: main, Start: start, End: end}
		stacks := [][]profile.Frame{
			{{Address: exe.Start + 0x123}, {Address: exe.Start + 0x456}},
			{{Address: libc.Start + 0x10}, {Address: exe.Start + 0x789}, {Address: exe.Start + 0x456}},
			{{Address: kernel.Start + 0x99, Category: profile.CategoryKernel}, {Address: libc.Start + 0x20}, {Label: "main loop"}},
			{{Label: "ünïcödé \"label\"\x01\u2028", Category: profile.CategoryUser}},
		}
		for i := 0; i < n; i++ {
			s := profile.NoStack
			if i%5 != 4 {
				s = th.InternStack(stacks[i%len(stacks)])
			}
			cpu := int64(i*1000 + 7)
			if i%7 == 0 {
				cpu = -1
			}
			th.Samples.Add(s, start+int64(i)*1_000_123, cpu)
		}
		th.Markers = []profile.Marker{
			{Name: "Instant", Start: start + 10, Phase: profile.PhaseInstant, Data: map[string]any{"type": "Text", "name": "hello"}},
			{Name: "Span", Start: start + 20, End: start + 3_000_000, Phase: profile.PhaseInterval, Category: profile.CategoryUser,
				Data: map[string]any{"type": "Span", "n": 3.5, "list": []any{"a", 1.0}, "nested": map[string]any{"ok": true}}},
			{Name: "Begin", Start: start + 30, Phase: profile.PhaseIntervalStart},
			{Name: "End", End: start + 40, Phase: profile.PhaseIntervalEnd},
		}
		proc.Threads = append(proc.Threads, th)
		return th
	}
	addThread(p1, 100, "app", true, 0, -1, 200)
	w := addThread(p1, 101, "worker", false, 1_000_000, 3_000_000_000, 50)
	w.Samples.Weight = make([]int32, w.Samples.Len())
	for i := range w.Samples.Weight {
		w.Samples.Weight[i] = int32(i%3 + 1)
	}
	addThread(p2, 200, "child", true, 1_500_000_000, 4_000_000_000, 30)
	addThread(p2, 201, "GeckoMain", false, 1_600_000_000, -1, 10)
	p.Processes = []*profile.Process{p1, p2}

	p.Symbols = &profile.SymbolTable{}
	p.Symbols.Add(exe.Key(), 0x1123, []profile.SymbolFrame{
		{Function: "main", FuncAddr: 0x1100, FuncSize: 0x80, File: "main.c", Line: 12},
		{Function: "inlined_helper", File: "helper.h", Line: 3},
	})
	p.Symbols.Add(exe.Key(), 0x1456, []profile.SymbolFrame{{Function: "main", FuncAddr: 0x1100, FuncSize: 0x80, File: "main.c", Line: 20}})
	p.Symbols.Add(exe.Key(), 0x1789, nil)
	p.Symbols.Add(libc.Key(), 0x28010, []profile.SymbolFrame{{Function: "write", FuncAddr: 0x28000, FuncSize: 0x40}})
	p.Symbols.Add(kernel.Key(), 0xffff_ffff_ffff_fff0, []profile.SymbolFrame{{Function: "far away", Line: 1}})
	return p
}

func encode(t testing.TB, p *profile.Profile) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	want := testProfile()
	data := encode(t, want)
	if !json.Valid(data) {
		t.Fatal("output is not valid JSON")
	}
	got, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	compareProfiles(t, got, want)

	// Writing what was read gives the same bytes.
	if again := encode(t, got); !bytes.Equal(again, data) {
		t.Error("second write differs from the first")
	}
}

func TestRoundTripFile(t *testing.T) {
	want := testProfile()
	dir := t.TempDir()
	for _, name := range []string{"p.json", "p.json.gz"} {
		path := filepath.Join(dir, name)
		if err := WriteFile(path, want); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		compareProfiles(t, got, want)
		b, _ := os.ReadFile(path)
		if gz := b[0] == 0x1f && b[1] == 0x8b; gz != strings.HasSuffix(name, ".gz") {
			t.Errorf("%s: gzipped = %v", name, gz)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("directory holds %d entries, want 2 (a temporary file left behind?)", len(ents))
	}
}

func TestWriteFileKeepsOldOnError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := testProfile()
	bad.Processes[0].Threads[0].Frames.Frames[0].Category = 99
	if err := WriteFile(path, bad); err == nil {
		t.Fatal("no error for a bad category")
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("file now holds %.20q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want 1", len(ents))
	}
}

func compareProfiles(t *testing.T, got, want *profile.Profile) {
	t.Helper()
	if !got.Meta.StartTime.Equal(want.Meta.StartTime) {
		t.Errorf("StartTime = %v, want %v", got.Meta.StartTime, want.Meta.StartTime)
	}
	gm, wm := got.Meta, want.Meta
	gm.StartTime, wm.StartTime = time.Time{}, time.Time{}
	if !reflect.DeepEqual(gm, wm) {
		t.Errorf("Meta = %+v\nwant %+v", gm, wm)
	}
	if len(got.Processes) != len(want.Processes) {
		t.Fatalf("%d processes, want %d", len(got.Processes), len(want.Processes))
	}
	for i, gp := range got.Processes {
		wp := want.Processes[i]
		if gp.Pid != wp.Pid || gp.Name != wp.Name || gp.Start != wp.Start || gp.End != wp.End || gp.ExitCode != wp.ExitCode {
			t.Errorf("process %d = %d %q %d %d %d, want %d %q %d %d %d", i,
				gp.Pid, gp.Name, gp.Start, gp.End, gp.ExitCode, wp.Pid, wp.Name, wp.Start, wp.End, wp.ExitCode)
		}
		if !reflect.DeepEqual(gp.Libs, wp.Libs) {
			t.Errorf("process %d libs = %+v\nwant %+v", i, gp.Libs, wp.Libs)
		}
		if len(gp.Threads) != len(wp.Threads) {
			t.Fatalf("process %d: %d threads, want %d", i, len(gp.Threads), len(wp.Threads))
		}
		for j, gt := range gp.Threads {
			wt := wp.Threads[j]
			where := fmt.Sprintf("process %d thread %d", i, j)
			if gt.Tid != wt.Tid || gt.Name != wt.Name || gt.Main != wt.Main || gt.Start != wt.Start || gt.End != wt.End {
				t.Errorf("%s = %d %q %v %d %d, want %d %q %v %d %d", where,
					gt.Tid, gt.Name, gt.Main, gt.Start, gt.End, wt.Tid, wt.Name, wt.Main, wt.Start, wt.End)
			}
			if !reflect.DeepEqual(gt.Frames.Frames, wt.Frames.Frames) {
				t.Errorf("%s frames = %+v\nwant %+v", where, gt.Frames.Frames, wt.Frames.Frames)
			}
			if !reflect.DeepEqual(gt.Stacks.Prefix, wt.Stacks.Prefix) || !reflect.DeepEqual(gt.Stacks.Frame, wt.Stacks.Frame) {
				t.Errorf("%s stacks differ", where)
			}
			if !reflect.DeepEqual(gt.Samples, wt.Samples) {
				t.Errorf("%s samples = %+v\nwant %+v", where, gt.Samples, wt.Samples)
			}
			if !reflect.DeepEqual(gt.Markers, wt.Markers) {
				t.Errorf("%s markers = %+v\nwant %+v", where, gt.Markers, wt.Markers)
			}
			if !reflect.DeepEqual(gt.Events, wt.Events) {
				t.Errorf("%s events = %+v\nwant %+v", where, gt.Events, wt.Events)
			}
		}
	}
	if (got.Symbols == nil) != (want.Symbols == nil) {
		t.Fatalf("Symbols = %v, want %v", got.Symbols, want.Symbols)
	}
	if want.Symbols == nil {
		return
	}
	if len(got.Symbols.Libs) != len(want.Symbols.Libs) {
		t.Errorf("%d symbol libs, want %d", len(got.Symbols.Libs), len(want.Symbols.Libs))
	}
	for k, wl := range want.Symbols.Libs {
		gl := got.Symbols.Libs[k]
		if gl == nil {
			t.Errorf("no symbols for %v", k)
			continue
		}
		if len(gl.Addresses) != len(wl.Addresses) {
			t.Errorf("%v: %d addresses, want %d", k, len(gl.Addresses), len(wl.Addresses))
		}
		for a, wf := range wl.Addresses {
			gf, ok := gl.Addresses[a]
			if !ok || len(gf) != len(wf) || (len(wf) > 0 && !reflect.DeepEqual(gf, wf)) {
				t.Errorf("%v %#x: %+v, want %+v", k, a, gf, wf)
			}
		}
	}
}

// TestStructure checks the document against what the front-end needs, by
// decoding it generically.
func TestStructure(t *testing.T) {
	p := testProfile()
	// Overlapping and unsorted libs must come out sorted and disjoint.
	libs := p.Processes[0].Libs
	libs = append(libs, profile.Lib{Start: libs[0].Start + 0x1000, End: libs[0].End + 0x1000, Offset: 0, Name: "overlap"})
	libs[0], libs[2] = libs[2], libs[0]
	p.Processes[0].Libs = libs

	var doc map[string]any
	if err := json.Unmarshal(encode(t, p), &doc); err != nil {
		t.Fatal(err)
	}
	meta := doc["meta"].(map[string]any)
	if v := meta["version"].(float64); v != Version {
		t.Errorf("version %v", v)
	}
	cats := meta["categories"].([]any)
	if c := cats[0].(map[string]any); c["color"] != "grey" || len(c["subcategories"].([]any)) != 1 {
		t.Errorf("first category %v", c)
	}
	for _, key := range []string{"pausedRanges", "processes"} {
		if _, ok := doc[key].([]any); !ok {
			t.Errorf("%s is not an array", key)
		}
	}
	procs := append([]any{doc}, doc["processes"].([]any)...)
	if len(procs) != 2 {
		t.Fatalf("%d processes", len(procs))
	}
	for pi, po := range procs {
		proc := po.(map[string]any)
		for _, key := range []string{"meta", "libs", "threads", "pausedRanges", "sources"} {
			if proc[key] == nil {
				t.Errorf("process %d has no %s", pi, key)
			}
		}
		if pi > 0 {
			if _, ok := proc["processes"].([]any); !ok {
				t.Errorf("process %d has no processes array", pi)
			}
		}
		type span struct{ start, end float64 }
		var spans []span
		for _, l := range proc["libs"].([]any) {
			lm := l.(map[string]any)
			for _, k := range []string{"start", "end", "offset", "name", "path", "debugName", "debugPath", "breakpadId", "arch"} {
				if _, ok := lm[k]; !ok {
					t.Errorf("lib %v lacks %s", lm["name"], k)
				}
			}
			s := span{lm["start"].(float64), lm["end"].(float64)}
			if n := len(spans); n > 0 && s.start < spans[n-1].end {
				t.Errorf("process %d libs unsorted or overlapping: %v after %v", pi, s, spans[n-1])
			}
			spans = append(spans, s)
		}
		mains := 0
		for _, th := range proc["threads"].([]any) {
			tm := th.(map[string]any)
			if tm["name"] == "GeckoMain" && tm["gprofMain"] == true {
				mains++
				if tm["processName"] != p.Processes[pi].Name {
					t.Errorf("GeckoMain processName %v", tm["processName"])
				}
			}
			strs := tm["stringTable"].([]any)
			frames := tm["frameTable"].(map[string]any)["data"].([]any)
			for _, f := range frames {
				row := f.([]any)
				if len(row) != 8 {
					t.Fatalf("frame row %v", row)
				}
				loc := strs[int(row[0].(float64))].(string)
				if !strings.HasPrefix(loc, "0x") {
					continue
				}
				a, ok := parseAddress(loc)
				if !ok {
					t.Errorf("bad address %q", loc)
				}
				in := false
				for _, l := range p.Processes[pi].Libs {
					in = in || l.Start <= a && a < l.End
				}
				if !in {
					t.Errorf("address %q in no lib", loc)
				}
			}
			for _, s := range tm["samples"].(map[string]any)["data"].([]any) {
				if r := s.([]any); r[2] != 0.0 {
					t.Errorf("eventDelay %v", r[2])
				}
			}
		}
		if mains != 1 {
			t.Errorf("process %d has %d GeckoMain threads", pi, mains)
		}
	}
	sub := procs[1].(map[string]any)["meta"].(map[string]any)
	if d := sub["startTime"].(float64) - meta["startTime"].(float64); d < 1499.9 || d > 1500.1 {
		t.Errorf("subprocess starts %vms after the parent, want 1500", d)
	}
}

func TestSortLibs(t *testing.T) {
	libs := []profile.Lib{
		{Start: 300, End: 400, Name: "c"},
		{Start: 100, End: 200, Name: "a"},
		{Start: 150, End: 250, Offset: 10, Name: "b"}, // overlaps a: trimmed to 200..250
		{Start: 120, End: 180, Name: "inside"},        // inside a: dropped
		{Start: 100, End: 200, Name: "a2"},            // same range as a: dropped
		{Start: 500, End: 500, Name: "empty"},
	}
	got := profile.SortLibs(libs)
	want := []profile.Lib{
		{Start: 100, End: 200, Name: "a"},
		{Start: 200, End: 250, Offset: 60, Name: "b"},
		{Start: 300, End: 400, Name: "c"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SortLibs = %+v\nwant %+v", got, want)
	}
}

func TestReadFirefox(t *testing.T) {
	p, err := ReadFile("testdata/firefox-v25.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Processes) != 2 {
		t.Fatalf("%d processes", len(p.Processes))
	}
	parent, child := p.Processes[0], p.Processes[1]
	if parent.Pid != 4242 || child.Pid != 4250 {
		t.Errorf("pids %d %d", parent.Pid, child.Pid)
	}
	if p.Meta.Product != "Firefox" || p.Meta.Arch != "x86_64" || p.Meta.Interval != time.Millisecond {
		t.Errorf("meta %+v", p.Meta)
	}
	if len(p.Meta.Categories) != 4 || p.Meta.Categories[3].Name != "JavaScript" {
		t.Errorf("categories %+v", p.Meta.Categories)
	}
	main := parent.Threads[0]
	if !main.Main || main.Name != "GeckoMain" {
		t.Errorf("main thread %q %v", main.Name, main.Main)
	}
	var labels, addrs int
	for _, f := range main.Frames.Frames {
		if f.Label != "" {
			labels++
		} else {
			addrs++
		}
	}
	if labels != 2 || addrs != 3 {
		t.Errorf("%d labels, %d addresses", labels, addrs)
	}
	if n := main.Samples.Len(); n != 4 {
		t.Fatalf("%d samples", n)
	}
	if main.Samples.Stack[3] != profile.NoStack {
		t.Errorf("null stack read as %d", main.Samples.Stack[3])
	}
	if main.Samples.Time[1] != 1_500_000 {
		t.Errorf("sample time %d", main.Samples.Time[1])
	}
	// Pre-v20-style markers and phased ones both arrive.
	if len(main.Markers) != 2 || main.Markers[1].Phase != profile.PhaseInterval || main.Markers[1].End != 3_250_000 {
		t.Errorf("markers %+v", main.Markers)
	}
	// The child process started 2.5ms after the parent; its times move
	// onto the parent's base.
	ct := child.Threads[0]
	if child.Start != 2_500_000 || ct.Samples.Time[0] != 2_500_000+1_000_000 {
		t.Errorf("child start %d, first sample %d", child.Start, ct.Samples.Time[0])
	}
	if len(child.Libs) != 1 || child.Libs[0].Name != "libxul.so" {
		t.Errorf("child libs %+v", child.Libs)
	}
	if child.Name != "Web Content" {
		t.Errorf("child name %q", child.Name)
	}
	if m := ct.Markers; len(m) != 1 || m[0].Name != "RefreshDriverTick" || m[0].Start != 4_000_000 || m[0].Data["name"] != "tick" {
		t.Errorf("child markers %+v", m)
	}
}

// Before version 20, markers had a single time and no phase.
func TestReadOldMarkers(t *testing.T) {
	in := `{"meta":{"version":19,"startTime":1000,"interval":1},"libs":[],"threads":[{"name":"GeckoMain","tid":1,"pid":"1",
	"markers":{"schema":{"name":0,"time":1,"data":2},"data":[[0,2.5,{"type":"tracing","interval":"start"}]]},
	"stringTable":["Paint"]}]}`
	p, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	m := p.Processes[0].Threads[0].Markers
	if len(m) != 1 || m[0].Name != "Paint" || m[0].Start != 2_500_000 || m[0].Phase != profile.PhaseInstant {
		t.Errorf("markers %+v", m)
	}
}

func TestReadErrors(t *testing.T) {
	good := encode(t, testProfile())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(good)
	zw.Close()

	tooNew := bytes.Replace(good, []byte(`"version":36`), []byte(`"version":37`), 1)
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "unexpected end of JSON input at byte 0"},
		{"not JSON", []byte("hello"), "invalid character 'h' looking for beginning of value at byte 0"},
		{"array", []byte("[1,2]"), "not a Gecko profile: top level is an array"},
		{"no meta", []byte(`{"threads":[]}`), "not a Gecko profile: missing meta"},
		{"no threads", []byte(`{"meta":{"version":5}}`), "not a Gecko profile: missing threads"},
		{"processed", []byte(`{"meta":{"preprocessedProfileVersion":50},"threads":[]}`), "processed Firefox Profiler profile"},
		{"too new", tooNew, "unsupported Gecko profile version 37 (newest supported is 36)"},
		{"truncated", good[:len(good)/2], "unexpected end of JSON input at byte"},
		{"truncated gzip", gz.Bytes()[:gz.Len()/2], "unexpected end of compressed input"},
		{"trailing", append(append([]byte{}, good...), "{}"...), "after top-level value"},
		{"part weighted", []byte(`{"meta":{},"threads":[{"samples":{"schema":{"stack":0,"time":1,"weight":2},"data":[[null,1,3]]},` +
			`"samples":{"schema":{"stack":0,"time":1},"data":[[null,2]]}}]}`), "1 of 2 samples have a weight"},
		{"bad stack", []byte(`{"meta":{},"threads":[{"stackTable":{"schema":{"prefix":0,"frame":1},"data":[[5,0]]}}]}`), "prefix 5"},
	}
	for _, c := range cases {
		_, err := Read(bytes.NewReader(c.in))
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q, want it to contain %q", c.name, err, c.want)
		}
	}
	if _, err := Read(bytes.NewReader(gz.Bytes())); err != nil {
		t.Errorf("gzipped: %v", err)
	}
}

func TestEmptyProfile(t *testing.T) {
	data := encode(t, &profile.Profile{Meta: profile.Meta{StartTime: time.Unix(1, 0)}})
	p, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Processes) != 0 || p.Meta.Product != "gprof" || p.Symbols != nil {
		t.Errorf("read back %+v", p)
	}
}

// TestZeroHugeExponent reads zeros with exponents near the parser's cap,
// which once cost a loop iteration per unit of exponent and made a few
// megabytes of them take minutes.
func TestZeroHugeExponent(t *testing.T) {
	rows := strings.Repeat(`[0,0e999999,0,0.0e-999999],`, 20000)
	in := `{"meta":{"version":36,"startTime":0e999999,"interval":1},"libs":[],"threads":[{"tid":1,"pid":1,` +
		`"samples":{"schema":{"stack":0,"time":1,"eventDelay":2,"threadCPUDelta":3},"data":[` + rows + `[null,1,0,null]]},` +
		`"stackTable":{"schema":{"prefix":0,"frame":1},"data":[[null,0]]},` +
		`"frameTable":{"schema":{"location":0},"data":[[0]]},"stringTable":["0x1"]}]}`
	start := time.Now()
	p, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("read took %v", d)
	}
	s := p.Processes[0].Threads[0].Samples
	if s.Len() != 20001 || s.Time[0] != 0 || s.CPUDelta[0] != 0 || s.Time[20000] != 1_000_000 {
		t.Errorf("samples: %d, time %d, cpu %d", s.Len(), s.Time[0], s.CPUDelta[0])
	}
}

// TestReadSortsLibs reads libs listed out of order and overlapping, as
// files not written by gprof may have them: the model must get them
// sorted and disjoint, or FindLib misses addresses and the processed
// writer refuses the profile.
func TestReadSortsLibs(t *testing.T) {
	in := `{"meta":{"version":36,"startTime":0,"interval":1},"libs":[` +
		`{"start":8192,"end":12288,"offset":0,"name":"b","debugName":"b","breakpadId":"B0"},` +
		`{"start":4096,"end":10000,"offset":0,"name":"a","debugName":"a","breakpadId":"A0"}],` +
		`"threads":[{"tid":1,"pid":1,"stackTable":{"schema":{"prefix":0,"frame":1},"data":[[null,0]]},` +
		`"frameTable":{"schema":{"location":0},"data":[[0]]},"stringTable":["0x1100"]}]}`
	p, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	pr := p.Processes[0]
	want := []profile.Lib{
		{Start: 4096, End: 10000, Name: "a", DebugName: "a", BreakpadID: "A0"},
		{Start: 10000, End: 12288, Offset: 10000 - 8192, Name: "b", DebugName: "b", BreakpadID: "B0"},
	}
	if !slices.Equal(pr.Libs, want) {
		t.Errorf("libs %+v, want %+v", pr.Libs, want)
	}
	if k, rel, _ := pr.Locate(pr.Threads[0].Frames.Frames[0]); k.DebugName != "a" || rel != 0x100 {
		t.Errorf("frame located in %v at %#x", k, rel)
	}
}
