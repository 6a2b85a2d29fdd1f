package processed

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/profile"
)

// decode parses a written profile with the standard library, independent
// of the reader under test.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	return m
}

func writeTest(t *testing.T, p *profile.Profile) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// check compares a JSON subtree, rendered compactly, with want.
func check(t *testing.T, root map[string]any, path, want string) {
	t.Helper()
	var v any = root
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: %q is not in an object", path, k)
		}
		v = m[k]
	}
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s:\n got %s\nwant %s", path, got, want)
	}
}

func TestWriteTables(t *testing.T) {
	out := decode(t, writeTest(t, testProfile()))

	check(t, out, "meta.preprocessedProfileVersion", "66")
	check(t, out, "meta.symbolicated", "true")
	check(t, out, "meta.interval", "1")
	check(t, out, "meta.startTime", "1700000000000")
	check(t, out, "meta.sampleUnits", `{"eventDelay":"ms","threadCPUDelta":"µs","time":"ms"}`)
	check(t, out, "meta.categories", `[{"color":"grey","name":"Other","subcategories":["Other"]},`+
		`{"color":"yellow","name":"User","subcategories":["Other"]},{"color":"orange","name":"Kernel","subcategories":["Other"]}]`)
	check(t, out, "libs", `[{"arch":"x86_64","breakpadId":"AAAA0000000000000000000000000000A","codeId":"0000aaaa","debugName":"app","debugPath":"/bin/app","name":"app","path":"/bin/app"},`+
		`{"arch":"x86_64","breakpadId":"CCCC0000000000000000000000000000C","codeId":null,"debugName":"libc.so.6","debugPath":"/lib/libc.so.6","name":"libc.so.6","path":"/lib/libc.so.6"},`+
		`{"arch":"x86_64","breakpadId":"","codeId":null,"debugName":"kernel","debugPath":"kernel","name":"kernel","path":"kernel"}]`)

	// Strings in order of first use.
	check(t, out, "shared.stringArray", `["main","main.c","helper","helper.h","compute","compute.c","memcpy","do_syscall_64",`+
		`"app+0x5000","0x900000","GC","worker","ProcessStart","Thread start","Thread exit","ThreadExit",`+
		`"Process start","Process exit","app","libc.so.6","kernel"]`)

	// Frames, in order of creation:
	//  0 main      app 0x2050-1 (caller, nudged)   depth 0, line 10
	//  1 helper    same address, inlined           depth 1, line 20
	//  2 compute   app 0x3010 (leaf)
	//  3 compute   app 0x3020 (leaf)
	//  4 compute   app 0x3020-1 (caller: the same model frame, duplicated)
	//  5 memcpy    libc 0x1100 (leaf)
	//  6 memcpy    libc 0x1100-1 (caller)
	//  7 do_syscall_64 kernel: 0xffffffff81000100 - base 0xffffffff80fff000
	//  8 app+0x5000  app 0x5000-1, no symbols, caller
	//  9 0x900000  in no lib
	// 10 GC        label
	// 11 worker    app 0x6000 (pid 200)
	check(t, out, "shared.frameTable.address", `[8271,8271,12304,12320,12319,4352,4351,4352,20479,-1,-1,24576]`)
	check(t, out, "shared.frameTable.inlineDepth", `[0,1,0,0,0,0,0,0,0,0,0,0]`)
	check(t, out, "shared.frameTable.func", `[0,1,2,2,2,3,3,4,5,6,7,8]`)
	check(t, out, "shared.frameTable.nativeSymbol", `[0,0,1,1,1,2,2,3,null,null,null,4]`)
	check(t, out, "shared.frameTable.line", `[10,20,5,7,7,null,null,null,null,null,null,null]`)
	check(t, out, "shared.frameTable.category", `[1,1,1,1,1,1,1,2,1,1,0,1]`)
	check(t, out, "shared.frameTable.subcategory", `[0,0,0,0,0,0,0,0,0,0,0,0]`)
	check(t, out, "shared.frameTable.length", `12`)

	check(t, out, "shared.funcTable.name", `[0,2,4,6,7,8,9,10,11]`)
	check(t, out, "shared.funcTable.resource", `[0,0,0,1,2,0,-1,-1,0]`)
	check(t, out, "shared.funcTable.source", `[0,1,2,null,null,null,null,null,null]`)
	check(t, out, "shared.sources.filename", `[1,3,5]`)
	check(t, out, "shared.sources.id", `[null,null,null]`)
	check(t, out, "shared.resourceTable", `{"host":[null,null,null],"length":3,"lib":[0,1,2],"name":[18,19,20],"type":[1,1,1]}`)
	check(t, out, "shared.nativeSymbols", `{"address":[8192,12288,4336,4096,24576],"functionSize":[256,128,64,512,16],`+
		`"length":5,"libIndex":[0,0,1,2,0],"name":[0,4,6,7,11]}`)

	// Stacks: the callers main→helper are shared by all main-thread
	// samples; compute at 0x3020 appears as a leaf (3) and as a caller (4).
	check(t, out, "shared.stackTable.frame", `[0,1,2,3,4,5,6,7,8,9,10,11]`)
	check(t, out, "shared.stackTable.prefixOffset", `[0,1,1,2,3,1,2,1,0,1,2,0]`)

	threads := out["threads"].([]any)
	if len(threads) != 3 {
		t.Fatalf("%d threads, want 3", len(threads))
	}
	th := threads[0].(map[string]any)
	// Named as in the Gecko output, so both get the same track label.
	check(t, th, "name", `"GeckoMain"`)
	check(t, th, "gprofName", `"app-main"`)
	check(t, th, "processName", `"app"`)
	check(t, th, "pid", `"100"`)
	check(t, th, "tid", `100`)
	check(t, th, "isMainThread", `true`)
	check(t, th, "processShutdownTime", `null`)
	check(t, th, "samples.stack", `[2,3,5,7,null]`)
	check(t, th, "samples.timeDeltas", `[1,1,1,1,1]`)
	check(t, th, "samples.threadCPUDelta", `[900,1000,null,1234.567,0]`)
	check(t, th, "samples.weight", `null`)
	check(t, th, "markers", `{"category":[0],"data":[{"type":"Lifecycle"}],"endTime":[null],"length":1,"name":[12],"phase":[0],"startTime":[0]}`)
	th = threads[1].(map[string]any)
	check(t, th, "name", `"worker"`)
	check(t, th, "isMainThread", `false`)
	check(t, th, "registerTime", `1`)
	check(t, th, "unregisterTime", `9`)
	check(t, th, "samples.stack", `[9,10]`)
	check(t, th, "samples.timeDeltas", `[2,1]`)
	// Lifecycle markers as the Gecko writer makes them, then the thread's.
	check(t, th, "markers.name", `[13,14,15]`)
	check(t, th, "markers.startTime", `[1,9,9]`)
	check(t, th, "markers.data", `[{"threadName":"worker","tid":101,"type":"GprofThread"},{"threadName":"worker","tid":101,"type":"GprofThread"},{"type":"Lifecycle"}]`)
	th = threads[2].(map[string]any)
	check(t, th, "pid", `"200"`)
	check(t, th, "processStartupTime", `0.5`)
	check(t, th, "processShutdownTime", `8`)
	check(t, th, "samples.stack", `[11]`)
	check(t, th, "markers.name", `[16,17]`)
	check(t, th, "markers.startTime", `[0.5,8]`)
	check(t, th, "markers.data", `[{"name":"other","pid":"200","type":"GprofProcess"},{"exitCode":0,"name":"other","pid":"200","type":"GprofProcess"}]`)
}

func TestWriteCallerFallsBackToNudgedKey(t *testing.T) {
	// A symbolizer that stores a caller's symbols under the address it
	// actually looked up (return address − 1) must work too.
	p := testProfile()
	st := testSymbols()
	frames := st.Lookup(appKey, 0x2050)
	delete(st.Libs[appKey].Addresses, 0x2050)
	st.Add(appKey, 0x204f, frames)
	p.Symbols = st
	out := decode(t, writeTest(t, p))
	check(t, out, "shared.frameTable.func", `[0,1,2,2,2,3,3,4,5,6,7,8]`)
	check(t, out, "shared.frameTable.address", `[8271,8271,12304,12320,12319,4352,4351,4352,20479,-1,-1,24576]`)
}

func TestWriteCategoriesWithoutGrey(t *testing.T) {
	p := testProfile()
	p.Meta.Categories = []profile.CategoryInfo{{Name: "A", Color: "red"}, {Name: "User", Color: "yellow"}, {Name: "Kernel", Color: "orange"}}
	out := decode(t, writeTest(t, p))
	check(t, out, "meta.categories", `[{"color":"grey","name":"Other","subcategories":["Other"]},{"color":"red","name":"A","subcategories":["Other"]},`+
		`{"color":"yellow","name":"User","subcategories":["Other"]},{"color":"orange","name":"Kernel","subcategories":["Other"]}]`)
	check(t, out, "shared.frameTable.category", `[2,2,2,2,2,2,2,3,2,2,1,2]`)
}

func TestWriteMarkerPayloads(t *testing.T) {
	p := testProfile()
	th := p.Processes[0].Threads[0]
	th.Markers = append(th.Markers,
		profile.Marker{Name: "exec", Start: 1e6, End: 2e6, Phase: profile.PhaseInterval, Category: profile.CategoryUser,
			Data: map[string]any{"type": "Exec", "path": "/bin/app", "argc": 3}},
		profile.Marker{Name: "end", End: 3e6, Phase: profile.PhaseIntervalEnd, Data: map[string]any{"type": "Exec", "ratio": 0.5}})
	out := decode(t, writeTest(t, p))
	check(t, out, "meta.markerSchema", `[{"chartLabel":"{marker.name}","description":"Process and thread lifecycle events observed by gprof.",`+
		`"display":["marker-chart","marker-table","timeline-overview"],"fields":[],"name":"Lifecycle","tableLabel":"{marker.name}","tooltipLabel":"{marker.name}"},`+
		`{"display":["marker-chart","marker-table"],"fields":[{"format":"integer","key":"argc","label":"argc"},{"format":"string","key":"path","label":"path"},`+
		`{"format":"decimal","key":"ratio","label":"ratio"}],"name":"Exec"},`+
		`{"chartLabel":"{marker.data.name}","display":["marker-chart","marker-table","timeline-overview"],"fields":[`+
		`{"format":"string","key":"name","label":"Program","searchable":true},{"format":"string","key":"previous","label":"Replaced","searchable":true},`+
		`{"format":"pid","key":"pid","label":"Process","searchable":true},{"format":"integer","key":"exitCode","label":"Exit code"}],`+
		`"name":"GprofProcess","tableLabel":"{marker.name}: {marker.data.name}","tooltipLabel":"{marker.name}: {marker.data.name}"},`+
		`{"chartLabel":"{marker.data.threadName}","display":["marker-chart","marker-table"],"fields":[`+
		`{"format":"string","key":"threadName","label":"Name","searchable":true},{"format":"tid","key":"tid","label":"Thread","searchable":true}],`+
		`"name":"GprofThread","tableLabel":"{marker.name}: {marker.data.threadName}","tooltipLabel":"{marker.name}: {marker.data.threadName}"},`+
		`{"chartLabel":"{marker.data.function}","display":["marker-chart","marker-table","timeline-overview"],"fields":[`+
		`{"format":"string","key":"function","label":"Waiting in","searchable":true},{"format":"string","key":"stack","label":"Called from","searchable":true},`+
		`{"format":"string","key":"syscall","label":"System call","searchable":true},{"format":"string","key":"wchan","label":"Wait channel","searchable":true}],`+
		`"name":"OffCPU","tableLabel":"{marker.name} in {marker.data.function} ({marker.data.syscall})","tooltipLabel":"{marker.name} in {marker.data.function}"},`+
		`{"chartLabel":"{marker.data.fields}","display":["marker-chart","marker-table"],"fields":[{"format":"string","key":"fields","label":"Fields","searchable":true}],`+
		`"name":"Tracepoint","tableLabel":"{marker.data.fields}","tooltipLabel":"{marker.name} {marker.data.fields}"},`+
		`{"chartLabel":"{marker.name}","display":["marker-chart","marker-table","timeline-overview"],"fields":[{"format":"string","key":"file","label":"Marker file","searchable":true}],`+
		`"name":"MarkerFile","tableLabel":"{marker.name}","tooltipLabel":"{marker.name}"}]`)
	th0 := out["threads"].([]any)[0].(map[string]any)
	check(t, th0, "markers.startTime", `[0,1,null]`)
	check(t, th0, "markers.endTime", `[null,2,3]`)
	check(t, th0, "markers.phase", `[0,1,3]`)
	check(t, th0, "markers.category", `[0,1,0]`)
	check(t, th0, "markers.data", `[{"type":"Lifecycle"},{"argc":3,"path":"/bin/app","type":"Exec"},{"ratio":0.5,"type":"Exec"}]`)
}

func TestWriteErrors(t *testing.T) {
	for name, mutate := range map[string]func(p *profile.Profile){
		"stack out of range": func(p *profile.Profile) { p.Processes[0].Threads[0].Samples.Stack[0] = 99 },
		"frame out of range": func(p *profile.Profile) { p.Processes[0].Threads[0].Stacks.Frame[0] = 99 },
		"prefix not earlier": func(p *profile.Profile) { p.Processes[0].Threads[0].Stacks.Prefix[0] = 3 },
		"short time column":  func(p *profile.Profile) { s := &p.Processes[0].Threads[0].Samples; s.Time = s.Time[:1] },
		"overlapping libs":   func(p *profile.Profile) { p.Processes[0].Libs[1].Start = appStart + 10 },
	} {
		p := testProfile()
		mutate(p)
		if err := Write(&bytes.Buffer{}, p); err == nil {
			t.Errorf("%s: no error", name)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: multi-line error %q", name, err)
		}
	}
}

func TestWriteReusedPid(t *testing.T) {
	p := testProfile()
	p.Processes[1].Pid = 100
	out := decode(t, writeTest(t, p))
	check(t, out["threads"].([]any)[2].(map[string]any), "pid", `"100.1"`)
	r := readTest(t, writeTest(t, p))
	if len(r.Processes) != 2 || r.Processes[1].Pid != 100 {
		t.Errorf("reused pid read back as %d processes", len(r.Processes))
	}
}

func TestWriteEscaping(t *testing.T) {
	p := testProfile()
	p.Processes[0].Name = "a\"b\\c\n\x01\xffé"
	out := decode(t, writeTest(t, p))
	check(t, out["threads"].([]any)[0].(map[string]any), "processName", `"a\"b\\c\n\u0001�é"`)
}

func TestWriteFileGzip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.json.gz")
	if err := WriteFile(path, testProfile()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 0x1f || b[1] != 0x8b {
		t.Fatal("not gzip")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary file left behind: %v", ents)
	}
	f, _ := os.Open(path)
	defer f.Close()
	p, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Processes) != 2 {
		t.Fatalf("%d processes", len(p.Processes))
	}
	plain := filepath.Join(dir, "p.json")
	if err := WriteFile(plain, testProfile()); err != nil {
		t.Fatal(err)
	}
	b2, _ := os.ReadFile(plain)
	if !reflect.DeepEqual(b2, writeTest(t, testProfile())) {
		t.Error("WriteFile and Write differ")
	}
}

// Counters and overhead reach the processed output with their process's
// main thread, and the front-end's display for each kind of counter.
func TestWriteCountersAndOverhead(t *testing.T) {
	p := testProfile()
	p.Processes[0].Counters = []profile.Counter{{Name: "Memory", Category: "Memory", Description: "RSS",
		Time: []int64{1e6, 2e6}, Count: []int64{4096, -1024}}}
	p.Overhead = &profile.Overhead{Time: []int64{1e6, 2e6}, Counters: []int64{500, 700}, Threads: []int64{1500, 300}}
	out := decode(t, writeTest(t, p))
	check(t, out, "counters", `[{"category":"Memory","description":"RSS","display":{"color":"orange","graphType":"line-accumulated","label":"Memory","markerSchemaLocation":"timeline-memory","sortWeight":20,"tooltipRows":[{"format":{"unit":"bytes"},"label":"relative memory at this time","labelKey":"memory-relative","source":"accumulated","type":"value"},{"format":{"unit":"bytes"},"label":"memory range in graph","labelKey":"memory-range","source":"count-range","type":"value"},{"format":{"unit":"number"},"label":"allocations and deallocations since the previous sample","labelKey":"memory-operations","source":"sample-number","type":"value"}],"unit":"bytes"},"mainThreadIndex":0,"name":"Memory","pid":"100","samples":{"count":[4096,-1024],"length":2,"time":[1,2]}}]`)
	ov := out["profilerOverhead"].([]any)
	if len(ov) != 1 {
		t.Fatalf("profilerOverhead %v", ov)
	}
	o := ov[0].(map[string]any)
	check(t, o, "samples", `{"counters":[500,700],"expiredMarkerCleaning":[0,0],"length":2,"locking":[0,0],"threads":[1500,300],"time":[1,2]}`)
	check(t, o, "statistics.samplingCount", "2")
	check(t, o, "mainThreadIndex", "0")
}

// Counters and overhead read back as written.
func TestReadCountersAndOverhead(t *testing.T) {
	p := testProfile()
	p.Processes[0].Counters = []profile.Counter{{Name: "Memory", Category: "Memory", Description: "RSS",
		Time: []int64{1e6, 2e6}, Count: []int64{4096, -1024}}}
	p.Overhead = &profile.Overhead{Time: []int64{1e6, 2e6}, Counters: []int64{500, 700}, Threads: []int64{1500, 300}}
	got, err := Read(bytes.NewReader(writeTest(t, p)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Processes[0].Counters, p.Processes[0].Counters) {
		t.Errorf("counters %+v, want %+v", got.Processes[0].Counters, p.Processes[0].Counters)
	}
	if !reflect.DeepEqual(got.Overhead, p.Overhead) {
		t.Errorf("overhead %+v, want %+v", got.Overhead, p.Overhead)
	}
}
