// Package otlp converts gprof's profile model into an OpenTelemetry
// profiles request: OTLP profiles/v1development, as opentelemetry-proto
// v1.10 and later define it, which an OpenTelemetry Collector (with its
// profiles support on) and continuous-profiling backends take in.
//
// The request holds one ResourceProfiles per process of the profile (per
// program, for a process that ran several through exec: they share the
// process.pid), with the resource attributes of OpenTelemetry's semantic
// conventions (service.name, process.pid, process.executable.name,
// host.name) and the caller's own (CI labels). Each has one ScopeProfiles
// (gprof) with two Profiles over the same samples: samples/count and
// cpu/nanoseconds. Their period is the sampling interval, of CPU time, or
// of wall-clock time for a recording with --off-cpu, whose samples count
// time off the CPU too. A Sample is one stack of one thread (attributes
// thread.id and thread.name) with a value and a timestamp per recorded
// sample, so the profile keeps its time axis; a profile without a start
// time (pprof files) gets one summed value per stack instead.
//
// Everything the samples refer to is in the request's one dictionary:
// mappings (with the GNU build ID of ELF files), locations with their
// addresses and, from the names stored in the profile, their lines,
// inline frames included (innermost first), functions, stacks (leaf
// first), strings and attributes. Entry 0 of every table is the empty
// value, as the format requires, and entries are not repeated.
package otlp

import (
	"compress/gzip"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/gprof-dev/gprof/internal/atomicfile"
	"github.com/gprof-dev/gprof/profile"
)

// ScopeName is the instrumentation scope of the profiles gprof sends.
const ScopeName = "gprof"

// Semantic-convention attribute keys.
const (
	AttrServiceName    = "service.name"
	AttrProcessPID     = "process.pid"
	AttrExecutableName = "process.executable.name"
	AttrHostName       = "host.name"
	AttrThreadID       = "thread.id"
	AttrThreadName     = "thread.name"
	AttrBuildIDGNU     = "process.executable.build_id.gnu"
	AttrFrameType      = "profile.frame.type"
)

// Options is what a request carries besides the profile.
type Options struct {
	// ServiceName is every process's service.name; empty means each
	// process's own name.
	ServiceName string
	// Attributes are added to every resource, in order; one with the key
	// of an attribute gprof sets replaces it (a --label host.name=... says
	// which runner it was).
	Attributes []Attribute
	// Version is gprof's, for the instrumentation scope.
	Version string
}

// Attribute is a string-valued resource attribute.
type Attribute struct{ Key, Value string }

// Build converts p into the request.
func Build(p *profile.Profile, o Options) *Request {
	b := &builder{
		src:  p,
		opts: o,
		dict: &Dictionary{
			MappingTable:   []*Mapping{{}},
			LocationTable:  []*Location{{}},
			FunctionTable:  []*Function{{}},
			LinkTable:      []*Link{{}},
			StringTable:    []string{""},
			AttributeTable: []*KeyValueAndUnit{{}},
			StackTable:     []*Stack{{}},
		},
		strs:      map[string]int32{"": 0},
		attrs:     map[attrKey]int32{},
		mappings:  map[mappingKey]int32{},
		functions: map[[2]int32]int32{},
		locations: map[string]int32{},
		stacks:    map[string]int32{},
		interval:  int64(p.Meta.Interval),
	}
	b.kernel, b.kernOK = p.Symbols.KernelLib()
	if !p.Meta.StartTime.IsZero() {
		b.start = p.Meta.StartTime.UnixNano()
	}
	periodType := "cpu"
	if p.OffCPU() {
		periodType = "wall"
	}
	b.period = &ValueType{TypeStrindex: b.str(periodType), UnitStrindex: b.str("nanoseconds")}
	out := &Request{Dictionary: b.dict}
	for _, pr := range p.Processes {
		if pr == nil {
			continue
		}
		if rp := b.process(pr); rp != nil {
			out.ResourceProfiles = append(out.ResourceProfiles, rp)
		}
	}
	return out
}

// WriteFile writes the request to path, atomically: OTLP JSON when the
// name ends in .json (before any .gz), protobuf otherwise; gzipped when it
// ends in .gz.
func WriteFile(path string, r *Request) error {
	name := strings.ToLower(path)
	gz := strings.HasSuffix(name, ".gz")
	data := r.MarshalProto()
	if strings.HasSuffix(strings.TrimSuffix(name, ".gz"), ".json") {
		var err error
		if data, err = r.MarshalJSON(); err != nil {
			return err
		}
		data = append(data, '\n')
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		if !gz {
			_, err := w.Write(data)
			return err
		}
		zw := gzip.NewWriter(w)
		if _, err := zw.Write(data); err != nil {
			return err
		}
		return zw.Close()
	})
}

type attrKey struct {
	key  int32
	str  string
	num  int64
	isNo bool
}

type mappingKey struct {
	start, limit, offset uint64
	file, buildID        string
}

type builder struct {
	src      *profile.Profile
	opts     Options
	dict     *Dictionary
	period   *ValueType
	interval int64
	start    int64 // the profile's start, in ns since the epoch; 0 unknown
	kernel   profile.LibKey
	kernOK   bool

	strs      map[string]int32
	attrs     map[attrKey]int32
	mappings  map[mappingKey]int32
	functions map[[2]int32]int32 // name, file
	locations map[string]int32   // encoded Location
	stacks    map[string]int32   // encoded location indices
}

// intern returns the index in table of the entry known by k, appending
// the one entry makes when k is new: every table of the dictionary holds
// each entry once, indexed by where it was first needed.
func intern[K comparable, V any](index map[K]int32, table *[]V, k K, entry func() V) int32 {
	if i, ok := index[k]; ok {
		return i
	}
	e := entry() // which may add to the other tables (a mapping its file name)
	i := int32(len(*table))
	*table = append(*table, e)
	index[k] = i
	return i
}

func (b *builder) str(s string) int32 {
	return intern(b.strs, &b.dict.StringTable, s, func() string { return s })
}

func (b *builder) strAttr(key, val string) int32 {
	k := attrKey{key: b.str(key), str: val}
	return intern(b.attrs, &b.dict.AttributeTable, k, func() *KeyValueAndUnit {
		return &KeyValueAndUnit{KeyStrindex: k.key, Value: Str(val)}
	})
}

func (b *builder) intAttr(key string, val int64) int32 {
	k := attrKey{key: b.str(key), num: val, isNo: true}
	return intern(b.attrs, &b.dict.AttributeTable, k, func() *KeyValueAndUnit {
		return &KeyValueAndUnit{KeyStrindex: k.key, Value: Int(val)}
	})
}

// resource returns the resource attributes of process pr: gprof's, then
// the caller's, which replace gprof's of the same key.
func (b *builder) resource(pr *profile.Process) *Resource {
	type kv struct {
		key string
		val *AnyValue
	}
	service := b.opts.ServiceName
	if service == "" {
		service = pr.Name
	}
	if service == "" {
		// What OpenTelemetry's SDKs call a service they know nothing of.
		service = "unknown_service"
	}
	attrs := []kv{
		{AttrServiceName, Str(service)},
		{AttrProcessPID, Int(int64(pr.Pid))},
	}
	if pr.Name != "" {
		attrs = append(attrs, kv{AttrExecutableName, Str(pr.Name)})
	}
	if h := b.src.Meta.Extra["host"]; h != "" {
		attrs = append(attrs, kv{AttrHostName, Str(h)})
	}
	for _, a := range b.opts.Attributes {
		replaced := false
		for i := range attrs {
			if attrs[i].key == a.Key {
				attrs[i].val, replaced = Str(a.Value), true
			}
		}
		if !replaced {
			attrs = append(attrs, kv{a.Key, Str(a.Value)})
		}
	}
	r := &Resource{}
	for _, a := range attrs {
		r.Attributes = append(r.Attributes, &KeyValue{Key: a.key, Value: a.val})
	}
	return r
}

// process converts one process; nil when it has no samples.
func (b *builder) process(pr *profile.Process) *ResourceProfiles {
	samples := &Profile{
		SampleType: &ValueType{TypeStrindex: b.str("samples"), UnitStrindex: b.str("count")},
	}
	cpu := &Profile{
		SampleType: &ValueType{TypeStrindex: b.str("cpu"), UnitStrindex: b.str("nanoseconds")},
	}
	for _, prof := range []*Profile{samples, cpu} {
		prof.PeriodType = b.period
		prof.Period = b.interval
		prof.TimeUnixNano = uint64(b.start)
		if d := b.src.Meta.Duration; d > 0 {
			prof.DurationNano = uint64(d)
		}
	}
	for _, th := range pr.Threads {
		if th != nil {
			b.thread(pr, th, samples, cpu)
		}
	}
	if len(samples.Samples) == 0 {
		return nil
	}
	return &ResourceProfiles{
		Resource: b.resource(pr),
		ScopeProfiles: []*ScopeProfiles{{
			Scope:    &Scope{Name: ScopeName, Version: b.opts.Version},
			Profiles: []*Profile{samples, cpu},
		}},
	}
}

// thread adds th's samples to the two profiles: one Sample per stack,
// with a value (and a timestamp, when the profile has a start time) per
// recorded sample of it.
func (b *builder) thread(pr *profile.Process, th *profile.Thread, samples, cpu *Profile) {
	sm := &th.Samples
	if sm.Len() == 0 {
		return
	}
	name := th.Name
	if name == "" && th.Main {
		name = pr.Name
	}
	attrs := []int32{b.intAttr(AttrThreadID, int64(th.Tid))}
	if name != "" {
		attrs = append(attrs, b.strAttr(AttrThreadName, name))
	}
	type group struct{ n, cpu *Sample }
	groups := map[int32]group{}
	locs := map[int64]int32{} // frame*2+caller → location
	for i, s := range sm.Stack {
		w := int64(1)
		if sm.Weight != nil && i < len(sm.Weight) {
			w = int64(sm.Weight[i])
		}
		c := w * b.interval
		if i < len(sm.CPUDelta) && sm.CPUDelta[i] >= 0 {
			c = sm.CPUDelta[i]
		}
		if s < 0 || int(s) >= th.Stacks.Len() {
			s = profile.NoStack
		}
		g, ok := groups[s]
		if !ok {
			st := b.stack(pr, th, s, locs)
			g = group{
				n:   &Sample{StackIndex: st, AttributeIndices: attrs},
				cpu: &Sample{StackIndex: st, AttributeIndices: attrs},
			}
			groups[s] = g
			samples.Samples = append(samples.Samples, g.n)
			cpu.Samples = append(cpu.Samples, g.cpu)
		}
		if b.start == 0 {
			// No time axis: one summed value per stack.
			if len(g.n.Values) == 0 {
				g.n.Values, g.cpu.Values = []int64{0}, []int64{0}
			}
			g.n.Values[0] += w
			g.cpu.Values[0] += c
			continue
		}
		var t int64
		if i < len(sm.Time) {
			t = sm.Time[i]
		}
		ts := uint64(max(b.start+t, 0))
		g.n.Values = append(g.n.Values, w)
		g.cpu.Values = append(g.cpu.Values, c)
		g.n.TimestampsUnixNano = append(g.n.TimestampsUnixNano, ts)
		g.cpu.TimestampsUnixNano = append(g.cpu.TimestampsUnixNano, ts)
	}
}

// stack returns the dictionary's stack for stack s of th, leaf first.
func (b *builder) stack(pr *profile.Process, th *profile.Thread, s int32, locs map[int64]int32) int32 {
	var ids []int32
	st := &th.Stacks
	caller := false
	for t, steps := s, 0; t >= 0 && int(t) < st.Len() && steps <= st.Len(); t, steps = st.Prefix[t], steps+1 {
		f := st.Frame[t]
		if f >= 0 && int(f) < th.Frames.Len() {
			k := int64(f) * 2
			if caller {
				k++
			}
			l, ok := locs[k]
			if !ok {
				l = b.location(pr, th.Frames.Frames[f], caller)
				locs[k] = l
			}
			ids = append(ids, l)
		}
		caller = true
	}
	if len(ids) == 0 {
		return 0
	}
	kb := make([]byte, 0, 4*len(ids))
	for _, id := range ids {
		kb = binary.LittleEndian.AppendUint32(kb, uint32(id))
	}
	return intern(b.stacks, &b.dict.StackTable, string(kb), func() *Stack { return &Stack{LocationIndices: ids} })
}

// location returns the dictionary's location for frame f of process pr;
// caller says it is a return address (its symbols may be filed one byte
// lower, see profile.SymbolTable.LookupFrame).
func (b *builder) location(pr *profile.Process, f profile.Frame, caller bool) int32 {
	loc := &Location{}
	frameType := "native"
	if f.Category == profile.CategoryKernel {
		frameType = "kernel"
	}
	if f.Label != "" {
		loc.Lines = []*Line{{FunctionIndex: b.function(f.Label, "")}}
		if f.Category == profile.CategoryKernel {
			loc.AttributeIndices = []int32{b.strAttr(AttrFrameType, frameType)}
		}
	} else {
		loc.Address = f.Address
		var syms []profile.SymbolFrame
		switch lib := profile.FindLib(pr.Libs, f.Address); {
		case lib != nil:
			loc.MappingIndex = b.mapping(lib)
			syms = b.src.Symbols.LookupFrame(lib.Key(), lib.Rel(f.Address), caller)
		case f.Category == profile.CategoryKernel:
			if b.kernOK {
				syms = b.src.Symbols.LookupFrame(b.kernel, f.Address, caller)
			}
		default:
			syms = b.src.Symbols.LookupFrame(profile.PerfMapKey(pr.Pid), f.Address, caller)
		}
		// The stored symbols list the outer function first; OTLP the
		// innermost.
		for i := len(syms) - 1; i >= 0; i-- {
			s := syms[i]
			loc.Lines = append(loc.Lines, &Line{FunctionIndex: b.function(s.Function, s.File), Line: int64(s.Line)})
		}
		loc.AttributeIndices = []int32{b.strAttr(AttrFrameType, frameType)}
	}
	var key strings.Builder
	fmt.Fprintf(&key, "%d %x %v", loc.MappingIndex, loc.Address, loc.AttributeIndices)
	for _, l := range loc.Lines {
		fmt.Fprintf(&key, " %d:%d", l.FunctionIndex, l.Line)
	}
	return intern(b.locations, &b.dict.LocationTable, key.String(), func() *Location { return loc })
}

func (b *builder) function(name, file string) int32 {
	if name == "" && file == "" {
		name = "[unknown]" // a function must have a name or a file
	}
	k := [2]int32{b.str(name), b.str(file)}
	return intern(b.functions, &b.dict.FunctionTable, k, func() *Function { return &Function{NameStrindex: k[0], FilenameStrindex: k[1]} })
}

func (b *builder) mapping(lib *profile.Lib) int32 {
	file := lib.Path
	if file == "" {
		file = lib.Name
	}
	k := mappingKey{lib.Start, lib.End, lib.Offset, file, lib.CodeID}
	return intern(b.mappings, &b.dict.MappingTable, k, func() *Mapping {
		// gprof's Offset is Start's distance from the binary's base,
		// which is its file offset for the usual ELF text mapping (the
		// first load segment maps file offset 0 at the base), as pprof's
		// writer assumes.
		m := &Mapping{MemoryStart: lib.Start, MemoryLimit: lib.End, FileOffset: lib.Offset, FilenameStrindex: b.str(file)}
		if gnuBuildID(lib) {
			m.AttributeIndices = []int32{b.strAttr(AttrBuildIDGNU, lib.CodeID)}
		}
		return m
	})
}

// gnuBuildID says whether lib's code ID is an ELF file's GNU build ID:
// lowercase hex whose breakpad form (the first 16 bytes as a GUID, in
// either byte order, and age 0) is the lib's breakpad ID. Mach-O UUIDs and
// PE code IDs are written in uppercase and do not have that relation.
func gnuBuildID(lib *profile.Lib) bool {
	id := lib.CodeID
	if id == "" || id != strings.ToLower(id) {
		return false
	}
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) < 4 {
		return false
	}
	var g [16]byte
	copy(g[:], raw)
	if fmt.Sprintf("%X0", g[:]) == lib.BreakpadID {
		return true
	}
	g[0], g[1], g[2], g[3] = g[3], g[2], g[1], g[0]
	g[4], g[5] = g[5], g[4]
	g[6], g[7] = g[7], g[6]
	return fmt.Sprintf("%X0", g[:]) == lib.BreakpadID
}

// EncodeParts encodes p as protobuf requests of at most maxBytes each
// where it can: a request over the bound is split in two by samples
// (threads, then a thread's samples in time order) until each part fits or
// holds a single sample. Collectors bound what they take (the
// OpenTelemetry Collector's OTLP receiver, 20 MiB decoded by default), and
// a long recording of many threads passes that. Every part carries its
// processes' resource attributes, so a backend sees one profile per part.
func EncodeParts(p *profile.Profile, o Options, maxBytes int) [][]byte {
	var spans []span
	for i, pr := range p.Processes {
		if pr == nil {
			continue
		}
		for j, th := range pr.Threads {
			if th != nil && th.Samples.Len() > 0 {
				spans = append(spans, span{i, j, 0, th.Samples.Len()})
			}
		}
	}
	return encodeSpans(p, o, spans, maxBytes)
}

// span is samples [lo, hi) of thread th of process proc.
type span struct{ proc, th, lo, hi int }

func encodeSpans(p *profile.Profile, o Options, spans []span, maxBytes int) [][]byte {
	b := Build(subProfile(p, spans), o).MarshalProto()
	n := 0
	for _, s := range spans {
		n += s.hi - s.lo
	}
	if len(b) <= maxBytes || n <= 1 {
		return [][]byte{b}
	}
	var left, right []span
	half := n / 2
	for _, s := range spans {
		switch k := s.hi - s.lo; {
		case half <= 0:
			right = append(right, s)
		case k <= half:
			left = append(left, s)
			half -= k
		default:
			left = append(left, span{s.proc, s.th, s.lo, s.lo + half})
			right = append(right, span{s.proc, s.th, s.lo + half, s.hi})
			half = 0
		}
	}
	return append(encodeSpans(p, o, left, maxBytes), encodeSpans(p, o, right, maxBytes)...)
}

// subProfile is p with only the samples of spans (sharing p's tables).
func subProfile(p *profile.Profile, spans []span) *profile.Profile {
	out := &profile.Profile{Meta: p.Meta, Symbols: p.Symbols}
	procs := map[int]*profile.Process{}
	for _, s := range spans {
		pr := procs[s.proc]
		if pr == nil {
			cp := *p.Processes[s.proc]
			cp.Threads = nil
			pr = &cp
			procs[s.proc] = pr
			out.Processes = append(out.Processes, pr)
		}
		th := *p.Processes[s.proc].Threads[s.th]
		sm := th.Samples
		th.Samples = profile.SampleTable{
			Stack:    sm.Stack[s.lo:s.hi],
			Time:     part(sm.Time, s.lo, s.hi),
			CPUDelta: part(sm.CPUDelta, s.lo, s.hi),
			Weight:   part(sm.Weight, s.lo, s.hi),
		}
		pr.Threads = append(pr.Threads, &th)
	}
	return out
}

// part is v[lo:hi] as far as v goes (a column may be shorter, or nil).
func part[T any](v []T, lo, hi int) []T {
	if v == nil {
		return nil
	}
	return v[min(lo, len(v)):min(hi, len(v))]
}
