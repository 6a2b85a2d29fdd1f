package otlp

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gprof-dev/gprof/profile"
)

// sample builds a profile of one process with two threads: a library
// with an ELF build ID, an inlined call, a kernel frame outside any
// library, and a label frame.
func sample() *profile.Profile {
	lib := profile.Lib{Start: 0x400000, End: 0x500000, Offset: 0, Name: "prog", Path: "/bin/prog",
		DebugName: "prog", BreakpadID: "0123456789ABCDEF0123456789ABCDEF0", CodeID: "67452301ab89efcd0123456789abcdef"}
	p := &profile.Profile{Meta: profile.Meta{Product: "gprof", Interval: time.Millisecond, Duration: 5e6,
		StartTime: time.Unix(1700000000, 0), Extra: map[string]string{"host": "box"}}}
	pr := &profile.Process{Pid: 10, Name: "prog", Libs: []profile.Lib{lib}, ExitCode: -1}
	p.Processes = []*profile.Process{pr}
	p.Symbols = &profile.SymbolTable{}
	p.Symbols.Add(lib.Key(), 0x1000, []profile.SymbolFrame{{Function: "outer", File: "a.c", Line: 3}, {Function: "inner", File: "a.c", Line: 9}})
	// A caller's symbols filed one byte below its return address.
	p.Symbols.Add(lib.Key(), 0x1fff, []profile.SymbolFrame{{Function: "main", File: "m.c", Line: 1}})
	p.Symbols.Add(profile.KernelKey, 0xffffffff81000000, []profile.SymbolFrame{{Function: "do_syscall_64"}})
	main := &profile.Thread{Tid: 10, Main: true}
	s1 := main.InternStack([]profile.Frame{{Address: 0x401000}, {Address: 0x402000}, {Label: "root"}})
	main.Samples.Add(s1, 1e6, 900e3)
	main.Samples.Add(s1, 2e6, 1100e3)
	main.Samples.Add(profile.NoStack, 3e6, -1) // no stack, CPU unknown
	worker := &profile.Thread{Tid: 11, Name: "worker"}
	s2 := worker.InternStack([]profile.Frame{{Address: 0xffffffff81000000, Category: profile.CategoryKernel}, {Address: 0x402000}, {Label: "root"}})
	worker.Samples.Add(s2, 1500e3, 1e6)
	worker.Samples.Add(s1k(worker), 2500e3, 1e6)
	pr.Threads = []*profile.Thread{main, worker}
	return p
}

// s1k interns the main thread's stack in th's own tables.
func s1k(th *profile.Thread) int32 {
	return th.InternStack([]profile.Frame{{Address: 0x401000}, {Address: 0x402000}, {Label: "root"}})
}

func str(d *Dictionary, i int32) string { return d.StringTable[i] }

// names returns a stack's function names, leaf first, inline frames
// innermost first.
func names(d *Dictionary, stack int32) []string {
	var out []string
	for _, l := range d.StackTable[stack].LocationIndices {
		for _, line := range d.LocationTable[l].Lines {
			out = append(out, str(d, d.FunctionTable[line.FunctionIndex].NameStrindex))
		}
	}
	return out
}

func TestBuild(t *testing.T) {
	req := Build(sample(), Options{Attributes: []Attribute{{"ci.commit", "abc"}, {"host.name", "runner-7"}}, Version: "1.2"})
	d := req.Dictionary
	// Entry 0 of every table is the zero value.
	if d.StringTable[0] != "" || !reflect.DeepEqual(d.MappingTable[0], &Mapping{}) || !reflect.DeepEqual(d.LocationTable[0], &Location{}) ||
		!reflect.DeepEqual(d.FunctionTable[0], &Function{}) || !reflect.DeepEqual(d.LinkTable[0], &Link{}) ||
		!reflect.DeepEqual(d.AttributeTable[0], &KeyValueAndUnit{}) || !reflect.DeepEqual(d.StackTable[0], &Stack{}) {
		t.Fatal("a dictionary table does not start with its zero value")
	}
	// No table repeats an entry.
	for name, n := range map[string]int{"string": len(d.StringTable), "function": len(d.FunctionTable), "location": len(d.LocationTable), "stack": len(d.StackTable), "mapping": len(d.MappingTable), "attribute": len(d.AttributeTable)} {
		seen := map[string]bool{}
		for i := 0; i < n; i++ {
			var v any
			switch name {
			case "string":
				v = d.StringTable[i]
			case "function":
				v = d.FunctionTable[i]
			case "location":
				v = d.LocationTable[i]
			case "stack":
				v = d.StackTable[i]
			case "mapping":
				v = d.MappingTable[i]
			case "attribute":
				v = d.AttributeTable[i]
			}
			kb, _ := json.Marshal(v)
			k := string(kb)
			if seen[k] {
				t.Errorf("%s table repeats %s", name, k)
			}
			seen[k] = true
		}
	}
	if len(req.ResourceProfiles) != 1 {
		t.Fatalf("%d resources, want 1", len(req.ResourceProfiles))
	}
	rp := req.ResourceProfiles[0]
	got := map[string]string{}
	for _, kv := range rp.Resource.Attributes {
		b, _ := json.Marshal(kv.Value)
		got[kv.Key] = string(b)
	}
	for k, want := range map[string]string{
		"service.name": `{"stringValue":"prog"}`, "process.pid": `{"intValue":"10"}`,
		"process.executable.name": `{"stringValue":"prog"}`, "host.name": `{"stringValue":"runner-7"}`,
		"ci.commit": `{"stringValue":"abc"}`,
	} {
		if g := got[k]; g != want {
			t.Errorf("resource attribute %s = %s, want %s", k, g, want)
		}
	}
	sp := rp.ScopeProfiles[0]
	if sp.Scope.Name != "gprof" || sp.Scope.Version != "1.2" || len(sp.Profiles) != 2 {
		t.Fatalf("scope %v with %d profiles", sp.Scope, len(sp.Profiles))
	}
	n, cpu := sp.Profiles[0], sp.Profiles[1]
	if str(d, n.SampleType.TypeStrindex) != "samples" || str(d, n.SampleType.UnitStrindex) != "count" ||
		str(d, cpu.SampleType.TypeStrindex) != "cpu" || str(d, cpu.SampleType.UnitStrindex) != "nanoseconds" ||
		str(d, n.PeriodType.TypeStrindex) != "cpu" || n.Period != 1e6 || n.TimeUnixNano != 1700000000e9 || n.DurationNano != 5e6 {
		t.Fatalf("profile types or times wrong: %v %v", n, cpu)
	}
	// Samples: main's stack (2 samples), main's sample without a stack,
	// worker's kernel stack and its copy of main's stack.
	type row struct {
		tid    int64
		names  []string
		values []int64
		cpu    []int64
		ts     []uint64
	}
	var rows []row
	for i, s := range n.Samples {
		c := cpu.Samples[i]
		if c.StackIndex != s.StackIndex || !slices.Equal(c.AttributeIndices, s.AttributeIndices) || !slices.Equal(c.TimestampsUnixNano, s.TimestampsUnixNano) {
			t.Fatalf("the two profiles' samples differ at %d", i)
		}
		r := row{names: names(d, s.StackIndex), values: s.Values, cpu: c.Values, ts: s.TimestampsUnixNano}
		for _, a := range s.AttributeIndices {
			kv := d.AttributeTable[a]
			if str(d, kv.KeyStrindex) == "thread.id" {
				r.tid = *kv.Value.IntValue
			}
		}
		rows = append(rows, r)
	}
	base := uint64(1700000000e9)
	want := []row{
		{10, []string{"inner", "outer", "main", "root"}, []int64{1, 1}, []int64{900e3, 1100e3}, []uint64{base + 1e6, base + 2e6}},
		{10, nil, []int64{1}, []int64{1e6}, []uint64{base + 3e6}},
		{11, []string{"do_syscall_64", "main", "root"}, []int64{1}, []int64{1e6}, []uint64{base + 1500e3}},
		{11, []string{"inner", "outer", "main", "root"}, []int64{1}, []int64{1e6}, []uint64{base + 2500e3}},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d samples, want %d: %+v", len(rows), len(want), rows)
	}
	for i := range want {
		g, w := rows[i], want[i]
		if g.tid != w.tid || !slices.Equal(g.names, w.names) || !slices.Equal(g.values, w.values) || !slices.Equal(g.cpu, w.cpu) || !slices.Equal(g.ts, w.ts) {
			t.Errorf("sample %d = %+v, want %+v", i, g, w)
		}
	}
	// Two threads with the same frames share one dictionary stack.
	if n.Samples[0].StackIndex != n.Samples[3].StackIndex {
		t.Error("the same stack in two threads is two dictionary stacks")
	}
	// The program's mapping has its build ID; the kernel frame none, and
	// frame types say which is which.
	leaf := d.LocationTable[d.StackTable[n.Samples[0].StackIndex].LocationIndices[0]]
	m := d.MappingTable[leaf.MappingIndex]
	if m.MemoryStart != 0x400000 || m.MemoryLimit != 0x500000 || str(d, m.FilenameStrindex) != "/bin/prog" || leaf.Address != 0x401000 {
		t.Errorf("leaf location %v in mapping %v", leaf, m)
	}
	if len(m.AttributeIndices) != 1 || str(d, d.AttributeTable[m.AttributeIndices[0]].KeyStrindex) != AttrBuildIDGNU ||
		*d.AttributeTable[m.AttributeIndices[0]].Value.StringValue != "67452301ab89efcd0123456789abcdef" {
		t.Errorf("mapping attributes %v", m.AttributeIndices)
	}
	kern := d.LocationTable[d.StackTable[n.Samples[2].StackIndex].LocationIndices[0]]
	if kern.MappingIndex != 0 || *d.AttributeTable[kern.AttributeIndices[0]].Value.StringValue != "kernel" {
		t.Errorf("kernel location %v", kern)
	}
}

func TestServiceNameAndOffCPU(t *testing.T) {
	p := sample()
	// A Python recording's categories without --off-cpu (issue 29) are
	// a CPU profile's.
	p.Meta.Categories = profile.PythonCategories
	cpu := Build(p, Options{})
	if pt := cpu.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].PeriodType; str(cpu.Dictionary, pt.TypeStrindex) != "cpu" {
		t.Errorf("CPU profile with the Idle category: period type %q, want cpu", str(cpu.Dictionary, pt.TypeStrindex))
	}
	p.Meta.Categories = profile.OffCPUCategories
	p.Meta.Extra[profile.ExtraOffCPU] = "true"
	req := Build(p, Options{ServiceName: "bench"})
	d := req.Dictionary
	for _, kv := range req.ResourceProfiles[0].Resource.Attributes {
		if kv.Key == "service.name" && *kv.Value.StringValue != "bench" {
			t.Errorf("service.name %v, want bench", kv.Value)
		}
		if kv.Key == "host.name" && *kv.Value.StringValue != "box" {
			t.Errorf("host.name %v, want the profile's box", kv.Value)
		}
	}
	if pt := req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].PeriodType; str(d, pt.TypeStrindex) != "wall" {
		t.Errorf("off-CPU period type %q, want wall", str(d, pt.TypeStrindex))
	}
}

// TestNoStartTime: a profile without a time axis (pprof's) gets one
// summed value per stack and no timestamps.
func TestNoStartTime(t *testing.T) {
	p := sample()
	p.Meta.StartTime = time.Time{}
	req := Build(p, Options{})
	prof := req.ResourceProfiles[0].ScopeProfiles[0].Profiles
	s, c := prof[0].Samples[0], prof[1].Samples[0]
	if !slices.Equal(s.Values, []int64{2}) || !slices.Equal(c.Values, []int64{2e6}) || len(s.TimestampsUnixNano) != 0 || prof[0].TimeUnixNano != 0 {
		t.Errorf("samples %v, cpu %v, timestamps %v", s.Values, c.Values, s.TimestampsUnixNano)
	}
}

// TestEncodings: the protobuf decodes (with decode, below, written from
// the .proto's field numbers) and the OTLP JSON parses to the request, and
// WriteFile picks the encoding (and gzip) by the name. The Collector's own
// decoding of both is in the end-to-end tests.
func TestEncodings(t *testing.T) {
	req := Build(sample(), Options{Attributes: []Attribute{{"k", ""}}})
	dir := t.TempDir()
	for _, name := range []string{"r.pb", "r.pb.gz", "r.json", "r.json.gz"} {
		path := filepath.Join(dir, name)
		if err := WriteFile(path, req); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Ext(name) == ".gz" {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if data, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if slices.Contains([]string{"r.json", "r.json.gz"}, name) {
			checkJSON(t, data, req)
			continue
		}
		got := decodeRequest(t, data)
		if !reflect.DeepEqual(got, req) {
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(req)
			t.Errorf("%s decodes to\n%s\nwant\n%s", name, a, b)
		}
	}
}

// checkJSON checks OTLP JSON's own rules on the encoding: 64-bit numbers
// as strings, lowerCamelCase names, and the figures themselves.
func checkJSON(t *testing.T, data []byte, req *Request) {
	t.Helper()
	var v struct {
		ResourceProfiles []struct {
			Resource struct {
				Attributes []struct {
					Key   string
					Value map[string]any
				}
			}
			ScopeProfiles []struct {
				Profiles []struct {
					TimeUnixNano string
					Period       string
					Samples      []struct {
						StackIndex         int32
						Values             []string
						TimestampsUnixNano []string
					}
				}
			}
		}
		Dictionary struct {
			StringTable   []string
			LocationTable []map[string]any
		}
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	p := v.ResourceProfiles[0].ScopeProfiles[0].Profiles[1]
	if p.TimeUnixNano != "1700000000000000000" || p.Period != "1000000" || p.Samples[0].Values[0] != "900000" || p.Samples[0].TimestampsUnixNano[1] != "1700000000002000000" {
		t.Errorf("64-bit numbers not as strings: %+v", p)
	}
	if !slices.Equal(v.Dictionary.StringTable, req.Dictionary.StringTable) || len(v.Dictionary.LocationTable) != len(req.Dictionary.LocationTable) {
		t.Errorf("dictionary lost: %v", v.Dictionary.StringTable)
	}
	attrs := map[string]any{}
	for _, a := range v.ResourceProfiles[0].Resource.Attributes {
		attrs[a.Key] = a.Value
	}
	if !reflect.DeepEqual(attrs["process.pid"], map[string]any{"intValue": "10"}) || !reflect.DeepEqual(attrs["k"], map[string]any{"stringValue": ""}) {
		t.Errorf("attributes %v", attrs)
	}
}

func TestGNUBuildID(t *testing.T) {
	for _, tc := range []struct {
		lib  profile.Lib
		want bool
	}{
		{profile.Lib{CodeID: "67452301ab89efcd0123456789abcdef", BreakpadID: "0123456789ABCDEF0123456789ABCDEF0"}, true},
		{profile.Lib{CodeID: "0123456789abcdef0123456789abcdef01234567", BreakpadID: "0123456789ABCDEF0123456789ABCDEF0"}, true}, // big-endian
		{profile.Lib{CodeID: "5E3A1B2C1d000", BreakpadID: "0123456789ABCDEF0123456789ABCDEF1"}, false},                           // PE
		{profile.Lib{CodeID: "0123456789ABCDEF0123456789ABCDEF", BreakpadID: "0123456789ABCDEF0123456789ABCDEF0"}, false},        // Mach-O UUID
		{profile.Lib{CodeID: "", BreakpadID: "0123456789ABCDEF0123456789ABCDEF0"}, false},
	} {
		if got := gnuBuildID(&tc.lib); got != tc.want {
			t.Errorf("gnuBuildID(%+v) = %v", tc.lib, got)
		}
	}
}

// TestEncodeParts: a request over the bound is split into parts that fit,
// which hold every sample once, each with its process's resource.
func TestEncodeParts(t *testing.T) {
	p := sample()
	whole := Build(p, Options{}).MarshalProto()
	if parts := EncodeParts(p, Options{}, len(whole)); len(parts) != 1 || !bytes.Equal(parts[0], whole) {
		t.Fatalf("a request within the bound was split in %d", len(parts))
	}
	limit := len(whole) * 2 / 3
	parts := EncodeParts(p, Options{}, limit)
	if len(parts) < 2 {
		t.Fatalf("%d parts of at most %d bytes for %d", len(parts), limit, len(whole))
	}
	var samples, cpu int64
	var stamps []uint64
	for i, b := range parts {
		r := decodeRequest(t, b)
		before := len(stamps)
		for _, rp := range r.ResourceProfiles {
			if *rp.Resource.Attributes[1].Value.IntValue != 10 {
				t.Errorf("part %d lacks its process.pid", i)
			}
			prof := rp.ScopeProfiles[0].Profiles
			for j, s := range prof[0].Samples {
				for k, v := range s.Values {
					samples += v
					cpu += prof[1].Samples[j].Values[k]
				}
				stamps = append(stamps, s.TimestampsUnixNano...)
			}
		}
		// Only a part of a single sample may exceed the bound.
		if n := len(stamps) - before; len(b) > limit && n != 1 {
			t.Errorf("part %d: %d bytes for %d samples, bound %d", i, len(b), n, limit)
		}
	}
	if samples != 5 || cpu != 5e6 || len(stamps) != 5 {
		t.Errorf("parts hold %d samples, %d ns of CPU, %d timestamps; want 5, 5e6, 5", samples, cpu, len(stamps))
	}
}
