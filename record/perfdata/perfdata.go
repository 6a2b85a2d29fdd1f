// Package perfdata reads the perf.data files Linux 'perf record' writes
// (tools/perf/Documentation/perf.data-file-format.txt), file and pipe mode,
// into the neutral events (package event) gprof's own backends emit, so the
// same builder unwinds, identifies and names them. Each record of the
// kernel's is decoded by package perfrecord, as the live backend decodes its
// rings; the header, the attrs and their ids, the feature sections and
// compressed records are the file's own, read here.
//
// It is pure byte parsing and works on any OS; only turning the events into
// names needs the binaries the recording saw.
package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/perfrecord"
)

// Magic starts every perf.data file (written in the recording host's byte
// order, so a file from the other endianness reads "2ELIFREP").
const Magic = "PERFILE2"

// Sniff reports whether head is the start of a perf.data file.
func Sniff(head []byte) bool {
	return len(head) >= 8 && (string(head[:8]) == Magic || string(head[:8]) == "2ELIFREP")
}

// The records perf itself writes into its files (tools/perf/util/event.h),
// beside the kernel's (package perfrecord decodes those).
const (
	recHeaderAttr     = 64
	recTracingData    = 66
	recHeaderBuildID  = 67
	recFinishedRound  = 68
	recAuxtrace       = 71
	recHeaderFeature  = 80
	recCompressed     = 81
	recCompressedNext = 83 // PERF_RECORD_COMPRESSED2
)

// miscBuildIDSize on HEADER_BUILD_ID says the build-id's size is in its
// 21st byte.
const miscBuildIDSize = 1 << 15

// Attr is one event of the recording (struct perf_event_attr, the fields a
// reader needs).
type Attr struct {
	Type        uint32
	Config      uint64
	Period      uint64 // sample_period, or sample_freq when Freq
	Freq        bool
	SampleType  uint64
	ReadFormat  uint64
	SampleIDAll bool
	// RegsUser is the mask of user registers each sample carries.
	RegsUser         uint64
	StackUser        uint32
	BranchSampleType uint64
	// Name is the event's name as perf printed it (from the file's
	// EVENT_DESC), or one derived from Type and Config.
	Name string
	IDs  []uint64
	// Trace lays out a tracepoint's raw data, from the file's tracing
	// data; nil for other events, or when the file has none.
	Trace *perfrecord.TraceFormat
}

// IsClock reports whether the event counts time, so a sample's period is
// CPU time in ns (cpu-clock, task-clock).
func (a *Attr) IsClock() bool {
	return a.Type == perfrecord.TypeSoftware && (a.Config == perfrecord.CountSWCPUClock || a.Config == perfrecord.CountSWTaskClock)
}

// Sampling reports whether the event takes samples.
func (a *Attr) Sampling() bool { return a.Period != 0 }

func (a *Attr) defaultName() string {
	switch {
	case a.Type == perfrecord.TypeSoftware && a.Config == perfrecord.CountSWCPUClock:
		return "cpu-clock"
	case a.Type == perfrecord.TypeSoftware && a.Config == perfrecord.CountSWTaskClock:
		return "task-clock"
	case a.Type == perfrecord.TypeHardware && a.Config == perfrecord.CountHWCPUCycles:
		return "cycles"
	case a.Type == perfrecord.TypeHardware && a.Config == perfrecord.CountHWInstructions:
		return "instructions"
	}
	return fmt.Sprintf("event type %d config %#x", a.Type, a.Config)
}

// File is a parsed perf.data file.
type File struct {
	Pipe bool
	// Attrs are the recording's events; Sampled indexes the first that
	// samples, whose samples are each thread's own (Events holds every
	// sampling event's; see SampledAttrs).
	Attrs   []Attr
	Sampled int

	// Facts from the feature sections (empty when the file lacks them).
	Hostname, OSRelease, Version, Arch, CPUDesc string
	CPUsOnline, CPUsAvail                       int
	Cmdline                                     []string
	// BuildIDs maps a file name (as in the mappings) to the build-id perf
	// stored for it; the kernel is "[kernel.kallsyms]".
	BuildIDs map[string][]byte
	// KernelMapStart is where the kernel's text was mapped (its MMAP
	// record), 0 when the file has none.
	KernelMapStart uint64

	// Events are the recording's events for the sampled attr, in time
	// order. Slices point into the file's bytes.
	Events []event.Event
	// Samples counts Events' samples; OtherSamples those of no sampling
	// event the file describes, which are left out.
	Samples, OtherSamples, Lost uint64
	// FirstTime and LastTime bound the events' times (perf clock ns).
	FirstTime, LastTime int64

	bo  binary.ByteOrder
	ids map[uint64]int // sample id -> attr index
	// dec decodes the first sampling event's records and every record
	// but samples; decs each sampling event's samples, by attr index;
	// sampling lists the sampling events' attr indexes in order, which
	// is their event.Sample.Event.
	dec      *perfrecord.Decoder
	decs     map[int]*perfrecord.Decoder
	sampling []int
	// traces are the tracepoint formats of the tracing data, by id.
	traces     map[uint64]*perfrecord.TraceFormat
	arena      perfrecord.Arena
	compressed [][]byte
}

// ErrCompressed is returned for files whose records perf compressed in a
// way this reader cannot decode.
var ErrCompressed = errors.New("perf.data records are compressed (perf record -z): record without -z, or run 'perf inject -i IN -o OUT' to decompress")

// Parse reads a whole perf.data file held in data. The events it returns
// point into data, which must not change afterwards.
func Parse(data []byte) (*File, error) {
	if !Sniff(data) {
		return nil, errors.New("not a perf.data file (no PERFILE2 magic)")
	}
	f := &File{BuildIDs: map[string][]byte{}, ids: map[uint64]int{}, Sampled: -1}
	f.bo = binary.LittleEndian
	if string(data[:8]) != Magic {
		f.bo = binary.BigEndian
	}
	if len(data) < 16 {
		return nil, errors.New("perf.data file is truncated in its header")
	}
	hsize := f.bo.Uint64(data[8:])
	if hsize == 16 {
		f.Pipe = true
		if err := f.readRecords(data[16:], true); err != nil {
			return nil, err
		}
	} else {
		if err := f.readFileMode(data, hsize); err != nil {
			return nil, err
		}
	}
	if err := f.decompress(); err != nil {
		return nil, err
	}
	if f.Sampled < 0 {
		return nil, errors.New("perf.data has no sampling event: record it with 'perf record' (not 'perf stat' or a counting-only event)")
	}
	f.finish()
	return f, nil
}

const fileHeaderSize = 104 // magic, size, attr_size, attrs, data, event_types, features[4]

func (f *File) readFileMode(data []byte, hsize uint64) error {
	if hsize < fileHeaderSize || uint64(len(data)) < hsize {
		return fmt.Errorf("perf.data header is %d bytes, expected at least %d: the file is truncated or not from perf", hsize, fileHeaderSize)
	}
	bo := f.bo
	attrSize := bo.Uint64(data[16:])
	attrs := section{bo.Uint64(data[24:]), bo.Uint64(data[32:])}
	dataSec := section{bo.Uint64(data[40:]), bo.Uint64(data[48:])}
	var features [4]uint64
	for i := range features {
		features[i] = bo.Uint64(data[72+8*i:])
	}
	ab, ok := attrs.in(data)
	if !ok || attrSize < 16+64 || attrs.size%attrSize != 0 {
		return errors.New("perf.data attrs section is out of range: the file is truncated or corrupt")
	}
	for len(ab) > 0 {
		one := ab[:attrSize]
		ab = ab[attrSize:]
		a, err := f.parseAttr(one[:attrSize-16])
		if err != nil {
			return err
		}
		idsSec := section{bo.Uint64(one[attrSize-16:]), bo.Uint64(one[attrSize-8:])}
		if idb, ok := idsSec.in(data); ok {
			for len(idb) >= 8 {
				a.IDs = append(a.IDs, bo.Uint64(idb))
				idb = idb[8:]
			}
		}
		f.addAttr(a)
	}
	if len(f.Attrs) == 0 {
		return errors.New("perf.data has no events")
	}
	// Features come first: HEADER_BUILD_ID and EVENT_DESC apply to what
	// the records say.
	db, ok := dataSec.in(data)
	if !ok {
		return errors.New("perf.data data section is out of range: the file is truncated (was perf record interrupted?)")
	}
	f.readFeatures(data, dataSec.offset+dataSec.size, features)
	f.selectAttr()
	return f.readRecords(db, false)
}

type section struct{ offset, size uint64 }

func (s section) in(data []byte) ([]byte, bool) {
	if s.offset > uint64(len(data)) || s.size > uint64(len(data))-s.offset {
		return nil, false
	}
	return data[s.offset : s.offset+s.size], true
}

// parseAttr reads a struct perf_event_attr of the file's size.
func (f *File) parseAttr(b []byte) (Attr, error) {
	if len(b) < 64 {
		return Attr{}, errors.New("perf.data has an event description too short to read")
	}
	bo := f.bo
	flags := bo.Uint64(b[40:])
	a := Attr{
		Type:        bo.Uint32(b[0:]),
		Config:      bo.Uint64(b[8:]),
		Period:      bo.Uint64(b[16:]),
		SampleType:  bo.Uint64(b[24:]),
		ReadFormat:  bo.Uint64(b[32:]),
		Freq:        flags&(1<<10) != 0,
		SampleIDAll: flags&(1<<18) != 0,
	}
	if len(b) >= 80 {
		a.BranchSampleType = bo.Uint64(b[72:])
	}
	if len(b) >= 96 {
		a.RegsUser = bo.Uint64(b[80:])
		a.StackUser = bo.Uint32(b[88:])
	}
	return a, nil
}

func (f *File) addAttr(a Attr) {
	f.Attrs = append(f.Attrs, a)
	for _, id := range a.IDs {
		f.ids[id] = len(f.Attrs) - 1
	}
}

// selectAttr picks the first sampling event and sets up the decoding of
// its records.
func (f *File) selectAttr() {
	if f.Sampled >= 0 {
		return
	}
	for i := range f.Attrs {
		a := &f.Attrs[i]
		if a.Type == perfrecord.TypeTracepoint && f.traces[a.Config] != nil {
			t := *f.traces[a.Config]
			if a.Name != "" {
				t.Name = a.Name
			}
			a.Trace = &t
			if a.Name == "" {
				a.Name = t.Name
			}
		}
		if a.Name == "" {
			a.Name = a.defaultName()
		}
	}
	for i := range f.Attrs {
		if f.Attrs[i].Sampling() {
			f.Sampled = i
			break
		}
	}
	if f.Sampled < 0 {
		return
	}
	f.newDecoder()
}

// readRecords walks the records of the data section (or, in pipe mode,
// of the whole stream after the header).
func (f *File) readRecords(b []byte, pipe bool) error {
	bo := f.bo
	for len(b) > 0 {
		if len(b) < 8 {
			if pipe {
				return nil // a stream cut short: keep what arrived
			}
			return errors.New("perf.data data section ends inside a record: the file is truncated or corrupt")
		}
		typ := bo.Uint32(b)
		size := int(bo.Uint16(b[6:]))
		if size < 8 || size > len(b) {
			if pipe && size <= 65535 && size > len(b) {
				return nil // the stream was cut inside its last record
			}
			return fmt.Errorf("perf.data has a record of %d bytes at a place with %d left: the file is truncated or corrupt", size, len(b))
		}
		rec := b[:size]
		b = b[size:]
		switch typ {
		case recHeaderAttr:
			if !pipe {
				break
			}
			if len(rec) < 8+64 {
				return errors.New("perf.data has an event description too short to read")
			}
			asz := int(bo.Uint32(rec[12:]))
			if asz < 64 || 8+asz > len(rec) {
				return errors.New("perf.data has an event description of a size this reader does not know")
			}
			a, err := f.parseAttr(rec[8 : 8+asz])
			if err != nil {
				return err
			}
			for p := 8 + asz; p+8 <= len(rec); p += 8 {
				a.IDs = append(a.IDs, bo.Uint64(rec[p:]))
			}
			f.addAttr(a)
		case recHeaderFeature:
			if len(rec) >= 16 {
				f.feature(int(bo.Uint64(rec[8:])), rec[16:])
			}
		case recHeaderBuildID:
			f.buildID(rec)
		case recTracingData, recAuxtrace:
			// Data follows the record, outside its size.
			var n, size uint64
			if typ == recTracingData && len(rec) >= 12 {
				size = uint64(bo.Uint32(rec[8:]))
				n = (size + 7) &^ 7
			} else if typ == recAuxtrace && len(rec) >= 16 {
				n = bo.Uint64(rec[8:])
			}
			if n > uint64(len(b)) {
				return errors.New("perf.data ends inside trace data: the file is truncated")
			}
			if typ == recTracingData {
				f.tracingData(b[:size])
			}
			b = b[n:]
		case recCompressed, recCompressedNext:
			f.compressed = append(f.compressed, rec)
		case recFinishedRound:
		default:
			if typ >= recHeaderAttr {
				break // perf's own bookkeeping
			}
			if pipe {
				f.selectAttr()
			}
			if f.Sampled < 0 {
				break
			}
			f.decode(typ, rec)
		}
	}
	return nil
}

// finish orders the events by time (perf writes them per CPU buffer, not
// in order) and finds the time bounds.
func (f *File) finish() {
	sort.SliceStable(f.Events, func(i, j int) bool {
		return event.EventTime(f.Events[i]) < event.EventTime(f.Events[j])
	})
	f.FirstTime, f.LastTime = 0, 0
	for _, e := range f.Events {
		t := event.EventTime(e)
		if t <= 0 {
			continue
		}
		if f.FirstTime == 0 || t < f.FirstTime {
			f.FirstTime = t
		}
		if t > f.LastTime {
			f.LastTime = t
		}
	}
	for _, i := range f.sampling {
		f.Attrs[i].IDs = nil // not needed past parsing
		f.KernelMapStart = max(f.KernelMapStart, f.decs[i].KernelStart)
	}
}

// SampledAttr returns the event whose samples Events holds.
func (f *File) SampledAttr() *Attr { return &f.Attrs[f.Sampled] }

// SampledAttrs returns the events that sample, in the order of
// event.Sample.Event: the first is SampledAttr.
func (f *File) SampledAttrs() []*Attr {
	var out []*Attr
	for _, i := range f.sampling {
		out = append(out, &f.Attrs[i])
	}
	return out
}

// tracingData reads the tracepoint formats of the file's tracing data;
// a file whose tracing data cannot be read still reads, without the
// tracepoints' fields.
func (f *File) tracingData(b []byte) {
	if t, _ := ParseTracingData(b); len(t) > 0 {
		f.traces = t
	}
}

// EventNames lists every event of the recording, as perf names them.
func (f *File) EventNames() []string {
	var names []string
	for _, a := range f.Attrs {
		names = append(names, a.Name)
	}
	return names
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
