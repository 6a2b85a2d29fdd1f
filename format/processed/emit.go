package processed

// Streaming the processed profile as JSON: meta, libs, counters, threads
// with their samples and markers, and the shared tables.

import (
	"slices"
	"strconv"

	"github.com/goccy/go-json"
	"github.com/gprof-dev/gprof/format/internal/jsonw"
	"github.com/gprof-dev/gprof/format/internal/lifecycle"
	"github.com/gprof-dev/gprof/profile"
)

// markerSchema describes one marker payload type in meta.markerSchema.
type markerSchema struct {
	name   string
	fields []schemaField
}

type schemaField struct{ key, format string }

func (b *builder) collectSchemas() []markerSchema {
	bare := false // markers without a payload
	types := map[string]map[string]string{}
	for _, t := range b.threads {
		for _, m := range t.th.Markers {
			if typ, _ := m.Data["type"].(string); lifecycle.IsLifecycle(typ) || lifecycle.HasSchema(typ) {
				continue // described by lifecycle.Schema
			}
			if m.Data == nil {
				bare = true
				continue
			}
			typ, _ := m.Data["type"].(string)
			if typ == "" {
				continue
			}
			fields := types[typ]
			if fields == nil {
				fields = map[string]string{}
				types[typ] = fields
			}
			for k, v := range m.Data {
				if k == "type" {
					continue
				}
				if _, ok := fields[k]; !ok {
					fields[k] = fieldFormat(v)
				}
			}
		}
	}
	var out []markerSchema
	if bare {
		out = append(out, markerSchema{name: lifecycleType})
	}
	names := make([]string, 0, len(types))
	for n := range types {
		if n != lifecycleType || !bare {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		s := markerSchema{name: n}
		keys := make([]string, 0, len(types[n]))
		for k := range types[n] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			s.fields = append(s.fields, schemaField{k, types[n][k]})
		}
		out = append(out, s)
	}
	return out
}

func fieldFormat(v any) string {
	switch v.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "integer"
	case float32, float64:
		return "decimal"
	}
	return "string"
}

// ms writes a nanosecond quantity as milliseconds, exactly.
func (j *jsonWriter) ms(ns int64) { j.scaled(ns, 6) }

func (b *builder) write(j *jsonWriter) {
	j.beginObject()
	b.writeMeta(j)
	b.writeLibs(j)
	j.key("pages")
	j.value("[]")
	j.key("counters")
	b.writeCounters(j)
	j.key("profilerOverhead")
	b.writeOverhead(j)
	j.key("threads")
	j.beginArray()
	for _, t := range b.threads {
		b.writeThread(j, t)
	}
	j.endArray()
	b.writeShared(j)
	j.endObject()
	j.out.Byte('\n')
}

func (b *builder) writeMeta(j *jsonWriter) {
	m := &b.p.Meta
	j.key("meta")
	j.beginObject()
	j.key("version")
	j.int(geckoVersion)
	j.key("preprocessedProfileVersion")
	j.int(Version)
	j.key("product")
	if m.Product != "" {
		j.str(m.Product)
	} else {
		j.str("gprof")
	}
	j.key("interval")
	j.ms(int64(m.Interval))
	j.key("startTime")
	if m.StartTime.IsZero() {
		j.int(0)
	} else {
		j.scaled(m.StartTime.UnixNano(), 6)
	}
	if m.Duration > 0 {
		if !m.StartTime.IsZero() {
			j.key("endTime")
			j.scaled(m.StartTime.UnixNano()+m.Duration, 6)
		}
		// The front-end's timeline starts here: where a bounded
		// recording's kept data starts, as in the Gecko output.
		j.key("profilingStartTime")
		j.ms(m.DataStart)
		j.key("profilingEndTime")
		j.ms(m.Duration)
	}
	j.key("processType")
	j.int(0)
	j.key("stackwalk")
	j.int(1)
	j.key("debug")
	j.boolean(false)
	j.key("symbolicated")
	j.boolean(true)
	j.key("usesOnlyOneStackType")
	j.boolean(true)
	j.key("sourceCodeIsNotOnSearchfox")
	j.boolean(true)
	for _, kv := range [][2]string{{"oscpu", m.OSCPU}, {"platform", m.Platform}, {"CPUName", m.CPUName}, {"abi", m.Arch}} {
		if kv[1] != "" {
			j.key(kv[0])
			j.str(kv[1])
		}
	}
	if m.LogicalCPUs > 0 {
		j.key("logicalCPUs")
		j.int(int64(m.LogicalCPUs))
	}
	j.key("sampleUnits")
	j.value(`{"time":"ms","eventDelay":"ms","threadCPUDelta":"µs"}`)
	j.key("extensions")
	j.value(`{"baseURL":[],"id":[],"name":[],"length":0}`)
	j.key("categories")
	j.beginArray()
	for _, c := range b.cats {
		j.beginObject()
		j.key("name")
		j.str(c.Name)
		j.key("color")
		j.str(c.Color)
		j.key("subcategories")
		j.value(`["Other"]`)
		j.endObject()
	}
	j.endArray()
	j.key("markerSchema")
	j.beginArray()
	for _, s := range b.schemas {
		j.beginObject()
		j.key("name")
		j.str(s.name)
		if s.name == lifecycleType && len(s.fields) == 0 {
			j.key("tooltipLabel")
			j.str("{marker.name}")
			j.key("tableLabel")
			j.str("{marker.name}")
			j.key("chartLabel")
			j.str("{marker.name}")
			j.key("description")
			j.str("Process and thread lifecycle events observed by gprof.")
			j.key("display")
			j.value(`["marker-chart","marker-table","timeline-overview"]`)
		} else {
			j.key("display")
			j.value(`["marker-chart","marker-table"]`)
		}
		j.key("fields")
		j.beginArray()
		for _, f := range s.fields {
			j.beginObject()
			j.key("key")
			j.str(f.key)
			j.key("label")
			j.str(f.key)
			j.key("format")
			j.str(f.format)
			j.endObject()
		}
		j.endArray()
		j.endObject()
	}
	for _, s := range lifecycle.Schema("fields") {
		j.value(s)
	}
	j.endArray()
	if len(m.Extra) > 0 || m.LostEvents > 0 {
		j.key("extra")
		j.beginArray()
		j.beginObject()
		j.key("label")
		j.str(extraLabel)
		j.key("entries")
		j.beginArray()
		keys := make([]string, 0, len(m.Extra))
		for k := range m.Extra {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			j.beginObject()
			j.key("label")
			j.str(k)
			j.key("format")
			j.str("string")
			j.key("value")
			j.str(m.Extra[k])
			j.endObject()
		}
		if m.LostEvents > 0 {
			j.beginObject()
			j.key("label")
			j.str(lostEventsLabel)
			j.key("format")
			j.str("integer")
			j.key("value")
			j.uint(m.LostEvents)
			j.endObject()
		}
		j.endArray()
		j.endObject()
		j.endArray()
	}
	j.endObject()
}

const (
	extraLabel      = "gprof"
	lostEventsLabel = "Lost events"
)

func (b *builder) writeLibs(j *jsonWriter) {
	j.key("libs")
	j.beginArray()
	for _, ol := range b.libs {
		l := &ol.lib
		arch := l.Arch
		if arch == "" {
			arch = b.p.Meta.Arch
		}
		j.beginObject()
		j.key("arch")
		j.str(arch)
		j.key("name")
		j.str(l.Name)
		j.key("path")
		j.str(l.Path)
		j.key("debugName")
		j.str(l.DebugName)
		j.key("debugPath")
		if l.DebugPath != "" {
			j.str(l.DebugPath)
		} else {
			j.str(l.Path)
		}
		j.key("breakpadId")
		j.str(l.BreakpadID)
		j.key("codeId")
		if l.CodeID != "" {
			j.str(l.CodeID)
		} else {
			j.null()
		}
		j.endObject()
	}
	j.endArray()
}

// counterDisplay is how the front-end draws a counter of each category
// gprof records, as its own Gecko import derives it.
var counterDisplay = map[string]string{
	"Memory": `{"graphType":"line-accumulated","unit":"bytes","color":"orange","markerSchemaLocation":"timeline-memory","sortWeight":20,"label":"Memory","tooltipRows":[` +
		`{"type":"value","source":"accumulated","format":{"unit":"bytes"},"label":"relative memory at this time","labelKey":"memory-relative"},` +
		`{"type":"value","source":"count-range","format":{"unit":"bytes"},"label":"memory range in graph","labelKey":"memory-range"},` +
		`{"type":"value","source":"sample-number","format":{"unit":"number"},"label":"allocations and deallocations since the previous sample","labelKey":"memory-operations"}]}`,
	"CPU": `{"graphType":"line-rate","unit":"percent","color":"grey","markerSchemaLocation":null,"sortWeight":40,"label":"Process CPU","tooltipRows":[` +
		`{"type":"value","source":"cpu-ratio","format":{"unit":"percent"},"label":"CPU","labelKey":"cpu"}]}`,
	// A process's threads on a CPU: the counts are their CPU time (ns)
	// since the previous sample, so the rate is the parallelism (a
	// million ns a millisecond per thread), which is what the graph
	// draws.
	"Parallelism": `{"graphType":"line-rate","unit":"","color":"teal","markerSchemaLocation":null,"sortWeight":45,"label":"Parallelism","tooltipRows":[` +
		`{"type":"value","source":"rate","format":{"unit":"number"},"label":"threads on a CPU × 1,000,000 (CPU ns per ms), since the previous sample"},` +
		`{"type":"value","source":"count","format":{"unit":"number"},"label":"CPU time of the threads since the previous sample (ns)"}]}`,
	"IPC": `{"graphType":"line-rate","unit":"","color":"purple","markerSchemaLocation":null,"sortWeight":46,"label":"IPC","tooltipRows":[` +
		`{"type":"value","source":"count","format":{"unit":"number"},"label":"instructions per cycle × 1000"}]}`,
}

// mainThreadIndex is the index in b.threads of the thread that holds
// pr's process track, or -1.
func (b *builder) mainThreadIndex(pr *profile.Process) int {
	o := b.ids.Process(pr)
	for i, t := range b.threads {
		if t.th == o.Main {
			return i
		}
	}
	return -1
}

func (b *builder) writeCounters(j *jsonWriter) {
	j.beginArray()
	for _, pr := range b.p.Processes {
		if pr == nil || len(pr.Counters) == 0 {
			continue
		}
		main := b.mainThreadIndex(pr)
		if main < 0 {
			continue
		}
		for i := range pr.Counters {
			c := &pr.Counters[i]
			display, ok := counterDisplay[c.Category]
			if !ok || len(c.Time) == 0 {
				continue
			}
			j.beginObject()
			j.key("name")
			j.str(c.Name)
			j.key("category")
			j.str(c.Category)
			j.key("description")
			j.str(c.Description)
			j.key("pid")
			j.str(b.ids.Process(pr).Pid)
			j.key("mainThreadIndex")
			j.int(int64(main))
			j.key("display")
			j.value(display)
			j.key("samples")
			j.beginObject()
			j.key("time")
			j.beginArray()
			for _, t := range c.Time {
				j.ms(t)
			}
			j.endArray()
			j.key("count")
			j.beginArray()
			for _, v := range c.Count {
				j.int(v)
			}
			j.endArray()
			j.key("length")
			j.int(int64(len(c.Time)))
			j.endObject()
			j.endObject()
		}
	}
	j.endArray()
}

// writeOverhead writes gprof's own cost, attached to the first process:
// times in ms, durations in ns, statistics in µs.
func (b *builder) writeOverhead(j *jsonWriter) {
	j.beginArray()
	o := b.p.Overhead
	st, ok := o.Stats()
	main := -1
	if ok && len(b.p.Processes) > 0 && b.p.Processes[0] != nil {
		main = b.mainThreadIndex(b.p.Processes[0])
	}
	if main >= 0 {
		j.beginObject()
		j.key("samples")
		j.beginObject()
		j.key("time")
		j.beginArray()
		for _, t := range o.Time {
			j.ms(t)
		}
		j.endArray()
		for _, col := range []struct {
			name string
			v    []int64
		}{{"locking", nil}, {"expiredMarkerCleaning", nil}, {"counters", o.Counters}, {"threads", o.Threads}} {
			j.key(col.name)
			j.beginArray()
			for i := range o.Time {
				if col.v == nil {
					j.int(0)
				} else {
					j.int(col.v[i])
				}
			}
			j.endArray()
		}
		j.key("length")
		j.int(int64(len(o.Time)))
		j.endObject()
		j.key("pid")
		j.str(b.ids.Process(b.p.Processes[0]).Pid)
		j.key("mainThreadIndex")
		j.int(int64(main))
		j.key("statistics")
		data, err := json.Marshal(st.JSON())
		if err != nil {
			panic(err) // numbers and strings only
		}
		j.valueBytes(data)
		j.endObject()
	}
	j.endArray()
}

// writeThread writes a thread, or one of its event tables (t.event >= 0)
// as a thread of its own: named "NAME [EVENT]", with a tid of its own
// ("TID.EVENT"), the event's samples and no markers; "gprofEvent" and
// "gprofEventOf" (the owner's index among the threads) let Read fold it
// back, as the Gecko writer does.
func (b *builder) writeThread(j *jsonWriter, t threadOut) {
	pr, th := t.pr, t.th
	o := b.ids.Process(pr)
	name, tid := b.ids.ThreadName(pr, th), b.ids.Tid(th)
	if t.event >= 0 {
		ev := th.Events[t.event].Event
		name, tid = lifecycle.EventThreadName(th.Name, pr.Name, ev), tid+"."+ev
	}
	j.beginObject()
	j.key("name")
	// As in the Gecko output, so that both show the same track labels.
	j.str(name)
	// The front-end ignores keys it does not know; Read takes the
	// thread's own name from here, which GeckoMain hides.
	j.key("gprofName")
	j.str(th.Name)
	if t.event >= 0 {
		j.key("gprofEvent")
		j.str(th.Events[t.event].Event)
		j.key("gprofEventOf")
		j.int(int64(t.owner))
	}
	j.key("processName")
	j.str(o.Name)
	j.key("processType")
	j.str("default")
	j.key("pid")
	j.str(o.Pid)
	j.key("tid")
	if profile.IsNumber(tid) {
		j.value(tid)
	} else {
		j.str(tid)
	}
	j.key("isMainThread")
	j.boolean(th == o.Main && t.event < 0)
	j.key("processStartupTime")
	j.ms(pr.Start)
	j.key("processShutdownTime")
	if pr.End < 0 {
		j.null()
	} else {
		j.ms(pr.End)
	}
	j.key("registerTime")
	j.ms(th.Start)
	j.key("unregisterTime")
	if th.End < 0 {
		j.null()
	} else {
		j.ms(th.End)
	}
	j.key("pausedRanges")
	j.value("[]")

	sm := t.samples()
	n := len(sm.Stack)
	j.key("samples")
	j.beginObject()
	j.key("length")
	j.int(int64(n))
	j.key("weightType")
	j.str("samples")
	j.key("stack")
	j.beginArray()
	for _, s := range sm.Stack {
		if s == profile.NoStack {
			j.null()
		} else {
			j.int(int64(t.leaf[s]))
		}
	}
	j.endArray()
	j.key("timeDeltas")
	j.beginArray()
	var prev int64
	for _, tm := range sm.Time {
		j.ms(tm - prev)
		prev = tm
	}
	j.endArray()
	j.key("weight")
	if sm.Weight == nil {
		j.null()
	} else {
		j.beginArray()
		for _, w := range sm.Weight {
			j.int(int64(w))
		}
		j.endArray()
	}
	if sm.CPUDelta != nil {
		j.key("threadCPUDelta")
		j.beginArray()
		for _, d := range sm.CPUDelta {
			if d < 0 {
				j.null()
			} else {
				j.scaled(d, 3)
			}
		}
		j.endArray()
	}
	j.endObject()

	if t.event >= 0 {
		b.writeMarkers(j, t, nil)
	} else {
		b.writeMarkers(j, t, t.markers)
	}
	j.endObject()
}

func (b *builder) writeMarkers(j *jsonWriter, t threadOut, ms []profile.Marker) {
	j.key("markers")
	j.beginObject()
	j.key("length")
	j.int(int64(len(ms)))
	j.key("name")
	j.beginArray()
	for _, m := range ms {
		j.int(int64(b.str(m.Name)))
	}
	j.endArray()
	j.key("startTime")
	j.beginArray()
	for _, m := range ms {
		if m.Phase == profile.PhaseIntervalEnd {
			j.null()
		} else {
			j.ms(m.Start)
		}
	}
	j.endArray()
	j.key("endTime")
	j.beginArray()
	for _, m := range ms {
		if m.Phase == profile.PhaseInstant || m.Phase == profile.PhaseIntervalStart {
			j.null()
		} else {
			j.ms(m.End)
		}
	}
	j.endArray()
	j.key("phase")
	j.beginArray()
	for _, m := range ms {
		j.int(int64(min(m.Phase, profile.PhaseIntervalEnd)))
	}
	j.endArray()
	j.key("category")
	j.beginArray()
	for _, m := range ms {
		j.int(int64(b.category(m.Category)))
	}
	j.endArray()
	j.key("data")
	j.beginArray()
	for _, m := range ms {
		if m.Data == nil {
			j.value(`{"type":"` + lifecycleType + `"}`)
			continue
		}
		data, err := json.Marshal(m.Data)
		if err != nil {
			// A payload that cannot be encoded loses its data, not the
			// marker.
			j.null()
			continue
		}
		if c := m.Cause - 1; c >= 0 && int(c) < len(t.leaf) && t.leaf[c] >= 0 && len(data) >= 2 {
			// The stack the marker was made at, which the front-end
			// shows with it.
			cause := `"cause":{"time":` + string(jsonw.AppendFixed(nil, m.Start, 6)) + `,"stack":` + strconv.Itoa(int(t.leaf[c])) + `}}`
			if len(data) > 2 {
				cause = "," + cause
			}
			data = append(data[:len(data)-1:len(data)-1], cause...)
		}
		j.valueBytes(data)
	}
	j.endArray()
	j.endObject()
}

func (b *builder) writeShared(j *jsonWriter) {
	j.key("shared")
	j.beginObject()

	// Strings used by the markers were interned while the threads were
	// written, so the string array comes last.
	n := len(b.sFrame)
	j.key("stackTable")
	j.beginObject()
	j.key("length")
	j.int(int64(n))
	j.key("frame")
	writeInts(j, b.sFrame)
	j.key("prefixOffset")
	j.beginArray()
	for i, p := range b.sPrefix {
		if p < 0 {
			j.int(0)
		} else {
			j.int(int64(int32(i) - p))
		}
	}
	j.endArray()
	j.endObject()

	n = len(b.fAddr)
	j.key("frameTable")
	j.beginObject()
	j.key("length")
	j.int(int64(n))
	j.key("address")
	j.beginArray()
	for _, a := range b.fAddr {
		j.int(a)
	}
	j.endArray()
	j.key("inlineDepth")
	j.beginArray()
	for _, d := range b.fDepth {
		j.int(int64(d))
	}
	j.endArray()
	j.key("category")
	writeInts(j, b.fCat)
	j.key("subcategory")
	writeZeros(j, n)
	j.key("func")
	writeInts(j, b.fFunc)
	j.key("nativeSymbol")
	writeOptInts(j, b.fSym)
	j.key("innerWindowID")
	writeZeros(j, n)
	j.key("line")
	j.beginArray()
	for _, l := range b.fLine {
		if l <= 0 {
			j.null()
		} else {
			j.int(int64(l))
		}
	}
	j.endArray()
	j.key("column")
	writeNulls(j, n)
	j.key("originalLocation")
	writeNulls(j, n)
	j.endObject()

	n = len(b.fnName)
	j.key("funcTable")
	j.beginObject()
	j.key("length")
	j.int(int64(n))
	j.key("name")
	writeInts(j, b.fnName)
	j.key("isJS")
	j.beginArray()
	for _, js := range b.fnJS {
		j.boolean(js)
	}
	j.endArray()
	j.key("relevantForJS")
	writeFalses(j, n)
	j.key("resource")
	writeInts(j, b.fnRes)
	j.key("source")
	writeOptInts(j, b.fnSource)
	j.key("lineNumber")
	j.beginArray()
	for _, l := range b.fnLine {
		if l <= 0 {
			j.null()
		} else {
			j.int(int64(l))
		}
	}
	j.endArray()
	j.key("columnNumber")
	writeNulls(j, n)
	j.key("originalLocation")
	writeNulls(j, n)
	j.endObject()

	n = len(b.libs)
	j.key("resourceTable")
	j.beginObject()
	j.key("length")
	j.int(int64(n))
	j.key("lib")
	j.beginArray()
	for i := range b.libs {
		j.int(int64(i))
	}
	j.endArray()
	j.key("name")
	j.beginArray()
	for _, l := range b.libs {
		j.int(int64(b.str(l.lib.Name)))
	}
	j.endArray()
	j.key("host")
	writeNulls(j, n)
	j.key("type")
	j.beginArray()
	for range b.libs {
		j.int(1) // ResourceType.Library
	}
	j.endArray()
	j.endObject()

	n = len(b.symLib)
	j.key("nativeSymbols")
	j.beginObject()
	j.key("length")
	j.int(int64(n))
	j.key("libIndex")
	writeInts(j, b.symLib)
	j.key("address")
	j.beginArray()
	for _, a := range b.symAddr {
		j.uint(a)
	}
	j.endArray()
	j.key("name")
	writeInts(j, b.symName)
	j.key("functionSize")
	j.beginArray()
	for _, s := range b.symSize {
		if s == 0 {
			j.null()
		} else {
			j.uint(s)
		}
	}
	j.endArray()
	j.endObject()

	n = len(b.srcFile)
	j.key("sources")
	j.beginObject()
	j.key("length")
	j.int(int64(n))
	j.key("id")
	writeNulls(j, n)
	j.key("filename")
	writeInts(j, b.srcFile)
	j.key("startLine")
	writeOnes(j, n)
	j.key("startColumn")
	writeOnes(j, n)
	j.key("sourceMapURL")
	writeNulls(j, n)
	j.key("content")
	writeNulls(j, n)
	j.endObject()

	j.key("sourceLocationTable")
	j.value(`{"length":0,"source":[],"line":[],"column":[]}`)

	j.key("stringArray")
	j.beginArray()
	for _, s := range b.strs.List() {
		j.str(s)
	}
	j.endArray()
	j.endObject()
}

func writeInts(j *jsonWriter, v []int32) {
	j.beginArray()
	for _, x := range v {
		j.int(int64(x))
	}
	j.endArray()
}

// writeOptInts writes v with negative values as null.
func writeOptInts(j *jsonWriter, v []int32) {
	j.beginArray()
	for _, x := range v {
		if x < 0 {
			j.null()
		} else {
			j.int(int64(x))
		}
	}
	j.endArray()
}

func writeRepeat(j *jsonWriter, n int, v string) {
	j.beginArray()
	for i := 0; i < n; i++ {
		j.value(v)
	}
	j.endArray()
}

func writeNulls(j *jsonWriter, n int)  { writeRepeat(j, n, "null") }
func writeZeros(j *jsonWriter, n int)  { writeRepeat(j, n, "0") }
func writeOnes(j *jsonWriter, n int)   { writeRepeat(j, n, "1") }
func writeFalses(j *jsonWriter, n int) { writeRepeat(j, n, "false") }
