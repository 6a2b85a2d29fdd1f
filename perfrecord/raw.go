package perfrecord

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// A tracepoint's sample carries the hit's fields in PERF_SAMPLE_RAW, laid
// out as the tracepoint's format file says (in tracefs,
// events/SYSTEM/NAME/format; perf.data files carry the same text in their
// tracing data). The format text looks like:
//
//	name: sys_enter_openat
//	ID: 782
//	format:
//		field:unsigned short common_type;	offset:0;	size:2;	signed:0;
//		...
//		field:const char * filename;	offset:24;	size:8;	signed:0;
//
//	print fmt: "..."
//
// The fields whose names start with common_ are every event's header
// (struct trace_entry); the others are the event's own.

// TraceFormat is a tracepoint's layout.
type TraceFormat struct {
	Name   string
	ID     uint64
	Fields []TraceField // the event's own fields, common_ ones left out
}

// TraceField is one field of a tracepoint's raw data.
type TraceField struct {
	Name, Type   string
	Offset, Size int
	Signed       bool
	// Kind says how the field's bytes are read.
	Kind FieldKind
	// Hex says the format prints the integer in hex (%x), as perf
	// script does (a system call's arguments, say).
	Hex bool
}

// FieldKind is how a field's value is read and printed.
type FieldKind uint8

const (
	FieldInt      FieldKind = iota // an integer of Size bytes
	FieldPointer                   // an address, printed in hex
	FieldString                    // char name[N]: a NUL-padded string
	FieldDynamic                   // __data_loc char[]: u32 length<<16 | offset, from the record's start
	FieldRelative                  // __rel_loc char[]: the same, from the field's end
	FieldArray                     // any other array, printed as its size
)

// maxTraceFields bounds what a format may declare: tracepoints have a few
// dozen at most; a format with more is not one.
const maxTraceFields = 256

// ParseTraceFormat reads a tracepoint's format file.
func ParseTraceFormat(text []byte) (*TraceFormat, error) {
	f := &TraceFormat{}
	inFormat := false
	for len(text) > 0 {
		var line []byte
		line, text, _ = bytes.Cut(text, []byte{'\n'})
		s := strings.TrimSpace(string(line))
		switch {
		case strings.HasPrefix(s, "name:"):
			f.Name = strings.TrimSpace(s[len("name:"):])
		case strings.HasPrefix(s, "ID:"):
			id, err := strconv.ParseUint(strings.TrimSpace(s[len("ID:"):]), 10, 64)
			if err != nil {
				return nil, errors.New("tracepoint format: its ID is not a number")
			}
			f.ID = id
		case s == "format:":
			inFormat = true
		case strings.HasPrefix(s, "print fmt:"):
			inFormat = false
			hex := hexFields(strings.TrimSpace(s[len("print fmt:"):]))
			for i := range f.Fields {
				if hex[f.Fields[i].Name] && f.Fields[i].Kind == FieldInt {
					f.Fields[i].Hex = true
				}
			}
		case inFormat && strings.HasPrefix(s, "field:"):
			fld, err := parseField(s)
			if err != nil {
				return nil, err
			}
			if strings.HasPrefix(fld.Name, "common_") {
				continue
			}
			if len(f.Fields) >= maxTraceFields {
				return nil, errors.New("tracepoint format: too many fields")
			}
			f.Fields = append(f.Fields, fld)
		}
	}
	if f.Name == "" {
		return nil, errors.New("tracepoint format: no name line")
	}
	return f, nil
}

// parseField reads "field:TYPE NAME;	offset:N;	size:N;	signed:N;".
func parseField(s string) (TraceField, error) {
	var fld TraceField
	parts := strings.Split(s, ";")
	if len(parts) < 3 {
		return fld, errors.New("tracepoint format: a field line lacks its offset or size")
	}
	decl := strings.TrimSpace(strings.TrimPrefix(parts[0], "field:"))
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > 1<<20 {
			return fld, errors.New("tracepoint format: a field's " + k + " is not a number")
		}
		switch k {
		case "offset":
			fld.Offset = n
		case "size":
			fld.Size = n
		case "signed":
			fld.Signed = n != 0
		}
	}
	// The name is the declaration's last word, less any [N].
	i := strings.LastIndexAny(decl, " \t*")
	fld.Name, fld.Type = decl[i+1:], strings.TrimSpace(decl[:i+1])
	array := false
	if j := strings.IndexByte(fld.Name, '['); j >= 0 {
		array = true
		fld.Name, fld.Type = fld.Name[:j], fld.Type+fld.Name[j:]
	}
	if fld.Name == "" {
		return fld, errors.New("tracepoint format: a field has no name")
	}
	switch {
	case strings.HasPrefix(fld.Type, "__data_loc"):
		fld.Kind = FieldDynamic
	case strings.HasPrefix(fld.Type, "__rel_loc"):
		fld.Kind = FieldRelative
	case array && strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(fld.Type, "const")), "char"):
		fld.Kind = FieldString
	case array:
		fld.Kind = FieldArray
	case strings.Contains(fld.Type, "*"):
		fld.Kind = FieldPointer
	}
	if fld.Kind == FieldInt && fld.Size != 1 && fld.Size != 2 && fld.Size != 4 && fld.Size != 8 {
		fld.Kind = FieldArray
	}
	return fld, nil
}

// AppendFields appends the fields of a hit's raw data, read in byte order
// o, to b as perf script shows them: "name=value" separated by spaces;
// strings as they are, pointers in hex, integers in decimal. A field that
// lies outside raw is left out.
func (f *TraceFormat) AppendFields(b []byte, raw []byte, big bool) []byte {
	o := order{big: big}
	for i := range f.Fields {
		fld := &f.Fields[i]
		if fld.Offset+fld.Size > len(raw) || fld.Size == 0 && fld.Kind != FieldString {
			continue
		}
		v := raw[fld.Offset : fld.Offset+fld.Size]
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = append(b, fld.Name...)
		b = append(b, '=')
		switch fld.Kind {
		case FieldString:
			b = appendCString(b, v)
		case FieldDynamic, FieldRelative:
			if len(v) < 4 {
				break
			}
			loc := o.u32(v)
			off, n := int(loc&0xffff), int(loc>>16)
			if fld.Kind == FieldRelative {
				off += fld.Offset + fld.Size
			}
			if off+n <= len(raw) {
				b = appendCString(b, raw[off:off+n])
			}
		case FieldPointer:
			b = append(b, "0x"...)
			b = strconv.AppendUint(b, uintOf(o, v), 16)
		case FieldArray:
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(fld.Size), 10)
			b = append(b, " bytes]"...)
		default:
			u := uintOf(o, v)
			if fld.Hex {
				b = append(b, "0x"...)
				b = strconv.AppendUint(b, u, 16)
			} else if fld.Signed {
				b = strconv.AppendInt(b, signExtend(u, fld.Size), 10)
			} else {
				b = strconv.AppendUint(b, u, 10)
			}
		}
	}
	return b
}

// hexFields reads a format's print fmt, "FORMAT", ARG, ARG..., and
// returns the fields (REC->name in an argument) that a %x or %X
// conversion prints.
func hexFields(pf string) map[string]bool {
	out := map[string]bool{}
	if !strings.HasPrefix(pf, `"`) {
		return out
	}
	end := 1
	for end < len(pf) && pf[end] != '"' {
		if pf[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(pf) {
		return out
	}
	format, rest := pf[1:end], pf[end+1:]
	var convs []byte
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			i++
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("-+ #0123456789.*lhzjt", format[j]) >= 0 {
			j++
		}
		if j < len(format) {
			convs = append(convs, format[j])
		}
		i = j
	}
	var args []string
	depth, start := 0, 0
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				args = append(args, rest[start:i])
				start = i + 1
			}
		}
	}
	args = append(args, rest[start:])
	if len(args) > 0 && strings.TrimSpace(args[0]) == "" {
		args = args[1:] // the comma after the format
	}
	for i, a := range args {
		if i >= len(convs) || convs[i] != 'x' && convs[i] != 'X' {
			continue
		}
		k := strings.Index(a, "REC->")
		if k < 0 {
			continue
		}
		name := a[k+len("REC->"):]
		n := 0
		for n < len(name) && (name[n] == '_' || name[n] >= 'a' && name[n] <= 'z' || name[n] >= 'A' && name[n] <= 'Z' || name[n] >= '0' && name[n] <= '9') {
			n++
		}
		out[name[:n]] = true
	}
	return out
}

func uintOf(o order, v []byte) uint64 {
	switch len(v) {
	case 1:
		return uint64(v[0])
	case 2:
		return uint64(o.u16(v))
	case 4:
		return uint64(o.u32(v))
	case 8:
		return o.u64(v)
	}
	return 0
}

func signExtend(u uint64, size int) int64 {
	shift := 64 - 8*uint(size)
	return int64(u<<shift) >> shift
}

// appendCString appends the string in v up to its first NUL, with bytes
// that are not printable ASCII as \xNN.
func appendCString(b, v []byte) []byte {
	if i := bytes.IndexByte(v, 0); i >= 0 {
		v = v[:i]
	}
	for _, c := range v {
		if c < ' ' || c > '~' || c == '\\' {
			b = append(b, '\\', 'x', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			continue
		}
		b = append(b, c)
	}
	return b
}

// ProbeFormat is the layout of the raw data of a kprobe or uprobe made
// through the kernel's kprobe and uprobe PMUs: the common header, then
// the probed address (or, at a return, the function and the address it
// returned to), as the kernel's struct kprobe_trace_entry_head and
// kretprobe_trace_entry_head lay them out (uprobes the same).
func ProbeFormat(name string, ret bool) *TraceFormat {
	if ret {
		return &TraceFormat{Name: name, Fields: []TraceField{
			{Name: "__probe_func", Type: "unsigned long", Offset: 8, Size: 8, Kind: FieldPointer},
			{Name: "__probe_ret_ip", Type: "unsigned long", Offset: 16, Size: 8, Kind: FieldPointer},
		}}
	}
	return &TraceFormat{Name: name, Fields: []TraceField{
		{Name: "__probe_ip", Type: "unsigned long", Offset: 8, Size: 8, Kind: FieldPointer},
	}}
}

// MarkerFile reports whether a mapped file's NUL-terminated path names a
// marker file, samply's convention for a program to mark its phases: it
// writes "START END NAME" lines to marker-PID.txt (or marker-PID-TID.txt)
// and maps it, so that a profiler sees it among the mappings of data
// (Decoder.KeepData).
func MarkerFile(path []byte) bool {
	if i := bytes.IndexByte(path, 0); i >= 0 {
		path = path[:i]
	}
	base := path[bytes.LastIndexByte(path, '/')+1:]
	return bytes.HasPrefix(base, []byte("marker-")) && bytes.HasSuffix(base, []byte(".txt"))
}
