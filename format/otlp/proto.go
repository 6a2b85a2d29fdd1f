package otlp

// The messages of an OTLP profiles request, as opentelemetry-proto v1.10
// and v1.11 define them (opentelemetry/proto/profiles/v1development,
// common/v1, resource/v1), with the fields gprof fills, and their
// encodings: protobuf, written by hand as pprof's profile package writes
// profile.proto, and OTLP JSON (the protobuf JSON mapping: lowerCamelCase
// names, 64-bit integers as strings, default values left out).
//
// Go's generated types for these messages are not published
// (go.opentelemetry.io/proto/otlp leaves the development signals out), and
// the Collector's pdata would bring gRPC and a JSON library into gprof for
// a few hundred lines of encoding.

import (
	"encoding/json"
	"strconv"
)

// Request is an ExportProfilesServiceRequest, whose fields are those of
// ProfilesData: the encoding of one is the encoding of the other.
type Request struct {
	ResourceProfiles []*ResourceProfiles `json:"resourceProfiles,omitempty"` // 1
	Dictionary       *Dictionary         `json:"dictionary,omitempty"`       // 2
}

// Dictionary is a ProfilesDictionary: the tables the profiles index.
// Entry 0 of each is its zero value.
type Dictionary struct {
	MappingTable   []*Mapping         `json:"mappingTable,omitempty"`   // 1
	LocationTable  []*Location        `json:"locationTable,omitempty"`  // 2
	FunctionTable  []*Function        `json:"functionTable,omitempty"`  // 3
	LinkTable      []*Link            `json:"linkTable,omitempty"`      // 4
	StringTable    []string           `json:"stringTable,omitempty"`    // 5
	AttributeTable []*KeyValueAndUnit `json:"attributeTable,omitempty"` // 6
	StackTable     []*Stack           `json:"stackTable,omitempty"`     // 7
}

// ResourceProfiles is one resource (a process) and its profiles.
type ResourceProfiles struct {
	Resource      *Resource        `json:"resource,omitempty"`      // 1
	ScopeProfiles []*ScopeProfiles `json:"scopeProfiles,omitempty"` // 2
}

// Resource is common/v1's Resource: its attributes.
type Resource struct {
	Attributes []*KeyValue `json:"attributes,omitempty"` // 1
}

// KeyValue is a resource attribute.
type KeyValue struct {
	Key   string    `json:"key,omitempty"`   // 1
	Value *AnyValue `json:"value,omitempty"` // 2
}

// AnyValue holds a string (1) or an int64 (3).
type AnyValue struct {
	StringValue *string `json:"stringValue,omitempty"` // 1
	IntValue    *int64  `json:"intValue,omitempty"`    // 3
}

// Str and Int make AnyValues.
func Str(s string) *AnyValue { return &AnyValue{StringValue: &s} }
func Int(n int64) *AnyValue  { return &AnyValue{IntValue: &n} }

// ScopeProfiles is the profiles of one instrumentation scope (gprof).
type ScopeProfiles struct {
	Scope    *Scope     `json:"scope,omitempty"`    // 1
	Profiles []*Profile `json:"profiles,omitempty"` // 2
}

// Scope is an InstrumentationScope.
type Scope struct {
	Name    string `json:"name,omitempty"`    // 1
	Version string `json:"version,omitempty"` // 2
}

// Profile is one sample type's samples.
type Profile struct {
	SampleType   *ValueType `json:"sampleType,omitempty"`   // 1
	Samples      []*Sample  `json:"samples,omitempty"`      // 2
	TimeUnixNano uint64     `json:"timeUnixNano,omitempty"` // 3, fixed64
	DurationNano uint64     `json:"durationNano,omitempty"` // 4
	PeriodType   *ValueType `json:"periodType,omitempty"`   // 5
	Period       int64      `json:"period,omitempty"`       // 6
}

// ValueType names a type and a unit by their strings.
type ValueType struct {
	TypeStrindex int32 `json:"typeStrindex,omitempty"` // 1
	UnitStrindex int32 `json:"unitStrindex,omitempty"` // 2
}

// Sample is a stack with attributes (its identity) and the values, and
// their timestamps, observed of it.
type Sample struct {
	StackIndex         int32    `json:"stackIndex,omitempty"`         // 1
	AttributeIndices   []int32  `json:"attributeIndices,omitempty"`   // 2
	Values             []int64  `json:"values,omitempty"`             // 4
	TimestampsUnixNano []uint64 `json:"timestampsUnixNano,omitempty"` // 5, fixed64
}

// Mapping is a binary's address range in a process.
type Mapping struct {
	MemoryStart      uint64  `json:"memoryStart,omitempty"`      // 1
	MemoryLimit      uint64  `json:"memoryLimit,omitempty"`      // 2
	FileOffset       uint64  `json:"fileOffset,omitempty"`       // 3
	FilenameStrindex int32   `json:"filenameStrindex,omitempty"` // 4
	AttributeIndices []int32 `json:"attributeIndices,omitempty"` // 5
}

// Stack is a list of locations, leaf first.
type Stack struct {
	LocationIndices []int32 `json:"locationIndices,omitempty"` // 1
}

// Location is an address, and the lines (innermost first) it is at.
type Location struct {
	MappingIndex     int32   `json:"mappingIndex,omitempty"`     // 1
	Address          uint64  `json:"address,omitempty"`          // 2
	Lines            []*Line `json:"lines,omitempty"`            // 3
	AttributeIndices []int32 `json:"attributeIndices,omitempty"` // 4
}

// Line is a function and a line in it.
type Line struct {
	FunctionIndex int32 `json:"functionIndex,omitempty"` // 1
	Line          int64 `json:"line,omitempty"`          // 2
}

// Function is a function's name and source file.
type Function struct {
	NameStrindex     int32 `json:"nameStrindex,omitempty"`     // 1
	FilenameStrindex int32 `json:"filenameStrindex,omitempty"` // 3
}

// Link ties samples to a trace; gprof has none, only the zero entry.
type Link struct{}

// KeyValueAndUnit is an attribute of the dictionary.
type KeyValueAndUnit struct {
	KeyStrindex int32     `json:"keyStrindex,omitempty"` // 1
	Value       *AnyValue `json:"value,omitempty"`       // 2
}

// The protobuf encoding. Each message appends its fields to a buffer;
// a nested message is written behind its length, which is known once it
// is written (appendMessage moves it into place).

type buf []byte

func (b buf) varint(v uint64) buf {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func (b buf) tag(field, wire int) buf { return b.varint(uint64(field)<<3 | uint64(wire)) }

const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
)

// uint writes a varint field, unless it is 0 (proto3's default).
func (b buf) uint(field int, v uint64) buf {
	if v == 0 {
		return b
	}
	return b.tag(field, wireVarint).varint(v)
}

// int writes an int32 or int64 field: negative values as 10-byte varints,
// as protobuf does.
func (b buf) int(field int, v int64) buf { return b.uint(field, uint64(v)) }

func (b buf) fixed64(field int, v uint64) buf {
	if v == 0 {
		return b
	}
	b = b.tag(field, wireFixed64)
	for i := 0; i < 8; i++ {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

func (b buf) str(field int, s string) buf {
	if s == "" {
		return b
	}
	return append(b.tag(field, wireBytes).varint(uint64(len(s))), s...)
}

// repeatedStr writes every element, empty ones included (a string
// table's "" is entry 0).
func (b buf) repeatedStr(field int, ss []string) buf {
	for _, s := range ss {
		b = append(b.tag(field, wireBytes).varint(uint64(len(s))), s...)
	}
	return b
}

// message writes a nested message field, even an empty one (a table's
// zero entry must be there).
func (b buf) message(field int, write func(buf) buf) buf {
	b = b.tag(field, wireBytes)
	start := len(b)
	b = write(b)
	n := len(b) - start
	// Move the body right to make room for its length.
	var l buf
	l = l.varint(uint64(n))
	b = append(b, l...)
	copy(b[start+len(l):], b[start:start+n])
	copy(b[start:], l)
	return b
}

func packedInts[T int32 | int64](b buf, field int, vs []T) buf {
	if len(vs) == 0 {
		return b
	}
	return b.message(field, func(b buf) buf {
		for _, v := range vs {
			b = b.varint(uint64(int64(v)))
		}
		return b
	})
}

func (b buf) packedFixed64(field int, vs []uint64) buf {
	if len(vs) == 0 {
		return b
	}
	b = b.tag(field, wireBytes).varint(uint64(8 * len(vs)))
	for _, v := range vs {
		for i := 0; i < 8; i++ {
			b = append(b, byte(v>>(8*i)))
		}
	}
	return b
}

func (r *Request) appendProto(b buf) buf {
	for _, rp := range r.ResourceProfiles {
		b = b.message(1, rp.appendProto)
	}
	if r.Dictionary != nil {
		b = b.message(2, r.Dictionary.appendProto)
	}
	return b
}

func (d *Dictionary) appendProto(b buf) buf {
	for _, m := range d.MappingTable {
		b = b.message(1, m.appendProto)
	}
	for _, l := range d.LocationTable {
		b = b.message(2, l.appendProto)
	}
	for _, f := range d.FunctionTable {
		b = b.message(3, f.appendProto)
	}
	for range d.LinkTable {
		b = b.message(4, func(b buf) buf { return b })
	}
	b = b.repeatedStr(5, d.StringTable)
	for _, a := range d.AttributeTable {
		b = b.message(6, a.appendProto)
	}
	for _, s := range d.StackTable {
		b = b.message(7, func(b buf) buf { return packedInts(b, 1, s.LocationIndices) })
	}
	return b
}

func (rp *ResourceProfiles) appendProto(b buf) buf {
	if rp.Resource != nil {
		b = b.message(1, func(b buf) buf {
			for _, kv := range rp.Resource.Attributes {
				b = b.message(1, kv.appendProto)
			}
			return b
		})
	}
	for _, sp := range rp.ScopeProfiles {
		b = b.message(2, sp.appendProto)
	}
	return b
}

func (kv *KeyValue) appendProto(b buf) buf {
	b = b.str(1, kv.Key)
	if kv.Value != nil {
		b = b.message(2, kv.Value.appendProto)
	}
	return b
}

func (v *AnyValue) appendProto(b buf) buf {
	// A oneof member is written even when it holds its default value.
	switch {
	case v.StringValue != nil:
		return append(b.tag(1, wireBytes).varint(uint64(len(*v.StringValue))), *v.StringValue...)
	case v.IntValue != nil:
		return b.tag(3, wireVarint).varint(uint64(*v.IntValue))
	}
	return b
}

func (sp *ScopeProfiles) appendProto(b buf) buf {
	if sp.Scope != nil {
		b = b.message(1, func(b buf) buf { return b.str(1, sp.Scope.Name).str(2, sp.Scope.Version) })
	}
	for _, p := range sp.Profiles {
		b = b.message(2, p.appendProto)
	}
	return b
}

func (p *Profile) appendProto(b buf) buf {
	if p.SampleType != nil {
		b = b.message(1, p.SampleType.appendProto)
	}
	for _, s := range p.Samples {
		b = b.message(2, s.appendProto)
	}
	b = b.fixed64(3, p.TimeUnixNano).uint(4, p.DurationNano)
	if p.PeriodType != nil {
		b = b.message(5, p.PeriodType.appendProto)
	}
	return b.int(6, p.Period)
}

func (v *ValueType) appendProto(b buf) buf {
	return b.int(1, int64(v.TypeStrindex)).int(2, int64(v.UnitStrindex))
}

func (s *Sample) appendProto(b buf) buf {
	b = b.int(1, int64(s.StackIndex))
	b = packedInts(b, 2, s.AttributeIndices)
	b = packedInts(b, 4, s.Values)
	return b.packedFixed64(5, s.TimestampsUnixNano)
}

func (m *Mapping) appendProto(b buf) buf {
	b = b.uint(1, m.MemoryStart).uint(2, m.MemoryLimit).uint(3, m.FileOffset).int(4, int64(m.FilenameStrindex))
	return packedInts(b, 5, m.AttributeIndices)
}

func (l *Location) appendProto(b buf) buf {
	b = b.int(1, int64(l.MappingIndex)).uint(2, l.Address)
	for _, line := range l.Lines {
		b = b.message(3, func(b buf) buf { return b.int(1, int64(line.FunctionIndex)).int(2, line.Line) })
	}
	return packedInts(b, 4, l.AttributeIndices)
}

func (f *Function) appendProto(b buf) buf {
	return b.int(1, int64(f.NameStrindex)).int(3, int64(f.FilenameStrindex))
}

func (a *KeyValueAndUnit) appendProto(b buf) buf {
	b = b.int(1, int64(a.KeyStrindex))
	if a.Value != nil {
		b = b.message(2, a.Value.appendProto)
	}
	return b
}

// MarshalProto encodes the request as protobuf, the body of an OTLP/HTTP
// request.
func (r *Request) MarshalProto() []byte { return r.appendProto(nil) }

// OTLP JSON writes 64-bit integers as strings (the protobuf JSON mapping);
// encoding/json's ",string" does that for single fields, these types for
// the rest.

func (v AnyValue) MarshalJSON() ([]byte, error) {
	switch {
	case v.StringValue != nil:
		return json.Marshal(struct {
			S string `json:"stringValue"`
		}{*v.StringValue})
	case v.IntValue != nil:
		return []byte(`{"intValue":"` + strconv.FormatInt(*v.IntValue, 10) + `"}`), nil
	}
	return []byte("{}"), nil
}

func (p Profile) MarshalJSON() ([]byte, error) {
	type alias struct {
		SampleType   *ValueType `json:"sampleType,omitempty"`
		Samples      []*Sample  `json:"samples,omitempty"`
		TimeUnixNano uint64     `json:"timeUnixNano,omitempty,string"`
		DurationNano uint64     `json:"durationNano,omitempty,string"`
		PeriodType   *ValueType `json:"periodType,omitempty"`
		Period       int64      `json:"period,omitempty,string"`
	}
	return json.Marshal(alias(p))
}

func (s Sample) MarshalJSON() ([]byte, error) {
	type alias struct {
		StackIndex         int32    `json:"stackIndex,omitempty"`
		AttributeIndices   []int32  `json:"attributeIndices,omitempty"`
		Values             []string `json:"values,omitempty"`
		TimestampsUnixNano []string `json:"timestampsUnixNano,omitempty"`
	}
	a := alias{StackIndex: s.StackIndex, AttributeIndices: s.AttributeIndices}
	for _, v := range s.Values {
		a.Values = append(a.Values, strconv.FormatInt(v, 10))
	}
	for _, t := range s.TimestampsUnixNano {
		a.TimestampsUnixNano = append(a.TimestampsUnixNano, strconv.FormatUint(t, 10))
	}
	return json.Marshal(a)
}

func (m Mapping) MarshalJSON() ([]byte, error) {
	type alias struct {
		MemoryStart      uint64  `json:"memoryStart,omitempty,string"`
		MemoryLimit      uint64  `json:"memoryLimit,omitempty,string"`
		FileOffset       uint64  `json:"fileOffset,omitempty,string"`
		FilenameStrindex int32   `json:"filenameStrindex,omitempty"`
		AttributeIndices []int32 `json:"attributeIndices,omitempty"`
	}
	return json.Marshal(alias(m))
}

func (l Location) MarshalJSON() ([]byte, error) {
	type alias struct {
		MappingIndex     int32   `json:"mappingIndex,omitempty"`
		Address          uint64  `json:"address,omitempty,string"`
		Lines            []*Line `json:"lines,omitempty"`
		AttributeIndices []int32 `json:"attributeIndices,omitempty"`
	}
	return json.Marshal(alias(l))
}

func (l Line) MarshalJSON() ([]byte, error) {
	type alias struct {
		FunctionIndex int32 `json:"functionIndex,omitempty"`
		Line          int64 `json:"line,omitempty,string"`
	}
	return json.Marshal(alias(l))
}

// MarshalJSON encodes the request as OTLP JSON, on one line.
func (r *Request) MarshalJSON() ([]byte, error) {
	type alias Request
	return json.Marshal((*alias)(r))
}
