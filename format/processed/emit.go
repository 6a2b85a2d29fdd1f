package processed

// Streaming the processed profile as JSON: meta, libs, counters, threads
// with their samples and markers, and the shared tables.

import (
	"cmp"
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

// msOrNull writes ns in ms, or null for a time not known (negative: a
// process or thread still running, a paused range never ended).
func (j *jsonWriter) msOrNull(ns int64) {
	if ns < 0 {
		j.null()
		return
	}
	j.ms(ns)
}

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
			object(
				field{"time", millis(c.Time)},
				field{"count", ints(c.Count)},
				field{"length", number(len(c.Time))},
			)(j)
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
		// Stats read every column as far as Time goes.
		n := len(o.Time)
		j.key("samples")
		object(
			field{"time", millis(o.Time)},
			field{"locking", repeat(n, "0")},
			field{"expiredMarkerCleaning", repeat(n, "0")},
			field{"counters", ints(o.Counters[:n])},
			field{"threads", ints(o.Threads[:n])},
			field{"length", number(n)},
		)(j)
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
	j.msOrNull(pr.End)
	j.key("registerTime")
	j.ms(th.Start)
	j.key("unregisterTime")
	j.msOrNull(th.End)
	j.key("pausedRanges")
	j.beginArray()
	for _, r := range b.p.Meta.PausedRanges {
		j.beginObject()
		j.key("startTime")
		j.ms(r.Start)
		j.key("endTime")
		j.msOrNull(r.End)
		j.key("reason")
		j.str(cmp.Or(r.Reason, profile.PausedByProfiler))
		j.endObject()
	}
	j.endArray()

	j.key("samples")
	samplesTable(t)(j)
	j.key("markers")
	if t.event >= 0 {
		b.markersTable(t, nil)(j) // the owner thread has the markers
	} else {
		b.markersTable(t, t.markers)(j)
	}
	j.endObject()
}

// samplesTable describes a thread's samples, or its event table's.
func samplesTable(t threadOut) func(*jsonWriter) {
	sm := t.samples()
	weight := raw("null") // every sample weighs 1
	if sm.Weight != nil {
		weight = ints(sm.Weight)
	}
	fields := []field{
		{"length", number(len(sm.Stack))},
		{"weightType", raw(`"samples"`)},
		{"stack", stacks(sm.Stack, t.leaf)},
		{"timeDeltas", deltas(sm.Time)},
		{"weight", weight},
	}
	if sm.CPUDelta != nil {
		fields = append(fields, field{"threadCPUDelta", cpuDeltas(sm.CPUDelta)})
	}
	return object(fields...)
}

// markersTable describes a thread's markers. Their names are interned as
// the name column is written.
func (b *builder) markersTable(t threadOut, ms []profile.Marker) func(*jsonWriter) {
	n := len(ms)
	return object(
		field{"length", number(n)},
		field{"name", computed(n, func(j *jsonWriter, i int) { j.int(int64(b.str(ms[i].Name))) })},
		field{"startTime", computed(n, func(j *jsonWriter, i int) {
			if ms[i].Phase == profile.PhaseIntervalEnd {
				j.null()
			} else {
				j.ms(ms[i].Start)
			}
		})},
		field{"endTime", computed(n, func(j *jsonWriter, i int) {
			if p := ms[i].Phase; p == profile.PhaseInstant || p == profile.PhaseIntervalStart {
				j.null()
			} else {
				j.ms(ms[i].End)
			}
		})},
		field{"phase", computed(n, func(j *jsonWriter, i int) { j.int(int64(min(ms[i].Phase, profile.PhaseIntervalEnd))) })},
		field{"category", computed(n, func(j *jsonWriter, i int) { j.int(int64(b.category(ms[i].Category))) })},
		field{"data", computed(n, func(j *jsonWriter, i int) {
			m := &ms[i]
			if m.Data == nil {
				j.value(`{"type":"` + lifecycleType + `"}`)
				return
			}
			data, err := json.Marshal(m.Data)
			if err != nil {
				// A payload that cannot be encoded loses its data, not
				// the marker.
				j.null()
				return
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
		})},
	)
}

func (b *builder) writeShared(j *jsonWriter) {
	j.key("shared")
	object(
		field{"stackTable", b.stackTable()},
		field{"frameTable", b.frameTable()},
		field{"funcTable", b.funcTable()},
		field{"resourceTable", b.resourceTable()},
		field{"nativeSymbols", b.nativeSymbols()},
		field{"sources", b.sources()},
		field{"sourceLocationTable", raw(`{"length":0,"source":[],"line":[],"column":[]}`)},
		// Strings used by the markers and resources were interned while
		// they were written, so the string array comes last.
		field{"stringArray", b.stringArray},
	)(j)
}

func (b *builder) stackTable() func(*jsonWriter) {
	st := &b.stacks
	return object(
		field{"length", number(st.Len())},
		field{"frame", ints(st.Frame)},
		// How far back the prefix stack is; 0 for a root.
		field{"prefixOffset", computed(len(st.Prefix), func(j *jsonWriter, i int) {
			if p := st.Prefix[i]; p < 0 {
				j.int(0)
			} else {
				j.int(int64(int32(i) - p))
			}
		})},
	)
}

func (b *builder) frameTable() func(*jsonWriter) {
	n := len(b.fAddr)
	return object(
		field{"length", number(n)},
		field{"address", ints(b.fAddr)},
		field{"inlineDepth", ints(b.fDepth)},
		field{"category", ints(b.fCat)},
		field{"subcategory", repeat(n, "0")},
		field{"func", ints(b.fFunc)},
		field{"nativeSymbol", indexes(b.fSym)},
		field{"innerWindowID", repeat(n, "0")},
		field{"line", lines(b.fLine)},
		field{"column", repeat(n, "null")},
		field{"originalLocation", repeat(n, "null")},
	)
}

func (b *builder) funcTable() func(*jsonWriter) {
	n := len(b.fnName)
	return object(
		field{"length", number(n)},
		field{"name", ints(b.fnName)},
		field{"isJS", bools(b.fnJS)},
		field{"relevantForJS", repeat(n, "false")},
		field{"resource", ints(b.fnRes)},
		field{"source", indexes(b.fnSource)},
		field{"lineNumber", lines(b.fnLine)},
		field{"columnNumber", repeat(n, "null")},
		field{"originalLocation", repeat(n, "null")},
	)
}

// resourceTable describes one resource per lib, whose names are interned
// as the name column is written.
func (b *builder) resourceTable() func(*jsonWriter) {
	n := len(b.libs)
	return object(
		field{"length", number(n)},
		field{"lib", computed(n, func(j *jsonWriter, i int) { j.int(int64(i)) })},
		field{"name", computed(n, func(j *jsonWriter, i int) { j.int(int64(b.str(b.libs[i].lib.Name))) })},
		field{"host", repeat(n, "null")},
		field{"type", repeat(n, "1")}, // ResourceType.Library
	)
}

func (b *builder) nativeSymbols() func(*jsonWriter) {
	return object(
		field{"length", number(len(b.symLib))},
		field{"libIndex", ints(b.symLib)},
		field{"address", uints(b.symAddr)},
		field{"name", ints(b.symName)},
		field{"functionSize", computed(len(b.symSize), func(j *jsonWriter, i int) {
			if s := b.symSize[i]; s == 0 {
				j.null() // unknown
			} else {
				j.uint(s)
			}
		})},
	)
}

func (b *builder) sources() func(*jsonWriter) {
	n := len(b.srcFile)
	return object(
		field{"length", number(n)},
		field{"id", repeat(n, "null")},
		field{"filename", ints(b.srcFile)},
		field{"startLine", repeat(n, "1")},
		field{"startColumn", repeat(n, "1")},
		field{"sourceMapURL", repeat(n, "null")},
		field{"content", repeat(n, "null")},
	)
}

func (b *builder) stringArray(j *jsonWriter) {
	j.beginArray()
	for _, s := range b.strs.List() {
		j.str(s)
	}
	j.endArray()
}
