package otlp

import (
	"encoding/binary"
	"testing"
)

// A protobuf decoder of the request, for the tests only, written from the
// field numbers of the .proto files rather than from the encoder.

type field struct {
	num   int
	wire  int
	v     uint64 // varint or fixed64
	bytes []byte
}

func fields(t *testing.T, b []byte) []field {
	t.Helper()
	var out []field
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			t.Fatalf("bad tag")
		}
		b = b[n:]
		f := field{num: int(key >> 3), wire: int(key & 7)}
		switch f.wire {
		case 0:
			f.v, n = binary.Uvarint(b)
			if n <= 0 {
				t.Fatalf("bad varint")
			}
			b = b[n:]
		case 1:
			f.v = binary.LittleEndian.Uint64(b)
			b = b[8:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || int(l) > len(b)-n {
				t.Fatalf("bad length")
			}
			f.bytes = b[n : n+int(l)]
			b = b[n+int(l):]
		default:
			t.Fatalf("wire type %d", f.wire)
		}
		out = append(out, f)
	}
	return out
}

func packed32(t *testing.T, b []byte) []int32 {
	var out []int32
	for len(b) > 0 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			t.Fatal("bad packed varint")
		}
		out = append(out, int32(v))
		b = b[n:]
	}
	return out
}

func decodeRequest(t *testing.T, b []byte) *Request {
	r := &Request{}
	for _, f := range fields(t, b) {
		switch f.num {
		case 1:
			r.ResourceProfiles = append(r.ResourceProfiles, decodeResourceProfiles(t, f.bytes))
		case 2:
			r.Dictionary = decodeDictionary(t, f.bytes)
		}
	}
	return r
}

func decodeAnyValue(t *testing.T, b []byte) *AnyValue {
	for _, f := range fields(t, b) {
		switch f.num {
		case 1:
			return Str(string(f.bytes))
		case 3:
			return Int(int64(f.v))
		}
	}
	return &AnyValue{}
}

func decodeResourceProfiles(t *testing.T, b []byte) *ResourceProfiles {
	rp := &ResourceProfiles{}
	for _, f := range fields(t, b) {
		switch f.num {
		case 1:
			rp.Resource = &Resource{}
			for _, a := range fields(t, f.bytes) {
				kv := &KeyValue{}
				for _, g := range fields(t, a.bytes) {
					switch g.num {
					case 1:
						kv.Key = string(g.bytes)
					case 2:
						kv.Value = decodeAnyValue(t, g.bytes)
					}
				}
				rp.Resource.Attributes = append(rp.Resource.Attributes, kv)
			}
		case 2:
			sp := &ScopeProfiles{}
			for _, g := range fields(t, f.bytes) {
				switch g.num {
				case 1:
					sp.Scope = &Scope{}
					for _, h := range fields(t, g.bytes) {
						if h.num == 1 {
							sp.Scope.Name = string(h.bytes)
						} else if h.num == 2 {
							sp.Scope.Version = string(h.bytes)
						}
					}
				case 2:
					sp.Profiles = append(sp.Profiles, decodeProfile(t, g.bytes))
				}
			}
			rp.ScopeProfiles = append(rp.ScopeProfiles, sp)
		}
	}
	return rp
}

func decodeValueType(t *testing.T, b []byte) *ValueType {
	v := &ValueType{}
	for _, f := range fields(t, b) {
		if f.num == 1 {
			v.TypeStrindex = int32(f.v)
		} else if f.num == 2 {
			v.UnitStrindex = int32(f.v)
		}
	}
	return v
}

func decodeProfile(t *testing.T, b []byte) *Profile {
	p := &Profile{}
	for _, f := range fields(t, b) {
		switch f.num {
		case 1:
			p.SampleType = decodeValueType(t, f.bytes)
		case 2:
			s := &Sample{}
			for _, g := range fields(t, f.bytes) {
				switch g.num {
				case 1:
					s.StackIndex = int32(g.v)
				case 2:
					s.AttributeIndices = packed32(t, g.bytes)
				case 4:
					for b := g.bytes; len(b) > 0; {
						v, n := binary.Uvarint(b)
						s.Values = append(s.Values, int64(v))
						b = b[n:]
					}
				case 5:
					if g.wire != 2 || len(g.bytes)%8 != 0 {
						t.Fatal("timestamps are not packed fixed64")
					}
					for i := 0; i < len(g.bytes); i += 8 {
						s.TimestampsUnixNano = append(s.TimestampsUnixNano, binary.LittleEndian.Uint64(g.bytes[i:]))
					}
				}
			}
			p.Samples = append(p.Samples, s)
		case 3:
			if f.wire != 1 {
				t.Fatal("time_unix_nano is not fixed64")
			}
			p.TimeUnixNano = f.v
		case 4:
			p.DurationNano = f.v
		case 5:
			p.PeriodType = decodeValueType(t, f.bytes)
		case 6:
			p.Period = int64(f.v)
		}
	}
	return p
}

func decodeDictionary(t *testing.T, b []byte) *Dictionary {
	d := &Dictionary{}
	for _, f := range fields(t, b) {
		switch f.num {
		case 1:
			m := &Mapping{}
			for _, g := range fields(t, f.bytes) {
				switch g.num {
				case 1:
					m.MemoryStart = g.v
				case 2:
					m.MemoryLimit = g.v
				case 3:
					m.FileOffset = g.v
				case 4:
					m.FilenameStrindex = int32(g.v)
				case 5:
					m.AttributeIndices = packed32(t, g.bytes)
				}
			}
			d.MappingTable = append(d.MappingTable, m)
		case 2:
			l := &Location{}
			for _, g := range fields(t, f.bytes) {
				switch g.num {
				case 1:
					l.MappingIndex = int32(g.v)
				case 2:
					l.Address = g.v
				case 3:
					line := &Line{}
					for _, h := range fields(t, g.bytes) {
						if h.num == 1 {
							line.FunctionIndex = int32(h.v)
						} else if h.num == 2 {
							line.Line = int64(h.v)
						}
					}
					l.Lines = append(l.Lines, line)
				case 4:
					l.AttributeIndices = packed32(t, g.bytes)
				}
			}
			d.LocationTable = append(d.LocationTable, l)
		case 3:
			fn := &Function{}
			for _, g := range fields(t, f.bytes) {
				if g.num == 1 {
					fn.NameStrindex = int32(g.v)
				} else if g.num == 3 {
					fn.FilenameStrindex = int32(g.v)
				}
			}
			d.FunctionTable = append(d.FunctionTable, fn)
		case 4:
			d.LinkTable = append(d.LinkTable, &Link{})
		case 5:
			d.StringTable = append(d.StringTable, string(f.bytes))
		case 6:
			a := &KeyValueAndUnit{}
			for _, g := range fields(t, f.bytes) {
				if g.num == 1 {
					a.KeyStrindex = int32(g.v)
				} else if g.num == 2 {
					a.Value = decodeAnyValue(t, g.bytes)
				}
			}
			d.AttributeTable = append(d.AttributeTable, a)
		case 7:
			s := &Stack{}
			for _, g := range fields(t, f.bytes) {
				if g.num == 1 {
					s.LocationIndices = packed32(t, g.bytes)
				}
			}
			d.StackTable = append(d.StackTable, s)
		}
	}
	return d
}
