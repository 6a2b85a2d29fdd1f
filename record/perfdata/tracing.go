package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/gprof-dev/gprof/perfrecord"
)

// The tracing data perf record writes for tracepoint events (the
// HEADER_TRACING_DATA feature in file mode, a PERF_RECORD_HEADER_TRACING_DATA
// record in pipe mode; tools/perf/util/trace-event-read.c reads it): the
// tracefs format of every tracepoint recorded, so that a file's raw
// fields can be read on any machine. Its layout:
//
//	"\x17\x08\x44tracing", a version string ("0.6"), NUL-terminated
//	u8 big-endian, u8 the size of a long, u32 the page size
//	"header_page\0", u64 size, the ring's page header format
//	"header_event\0", u64 size, the event header format
//	u32 count, then count of {u64 size, format}: ftrace's own events
//	u32 count of systems, then per system: its name, NUL-terminated,
//	    u32 count, and count of {u64 size, format}
//	(then kallsyms, printk formats and saved command lines, not read)
//
// Numbers are in the byte order the data declares.

var tracingMagic = []byte("\x17\x08\x44tracing")

// maxFormats bounds the formats read, against files that claim millions.
const maxFormats = 1 << 16

// ParseTracingData reads the tracepoint formats out of perf's tracing
// data, by tracepoint id.
func ParseTracingData(b []byte) (map[uint64]*perfrecord.TraceFormat, error) {
	bad := errors.New("perf.data tracing data is cut short or corrupt")
	if !bytes.HasPrefix(b, tracingMagic) {
		return nil, errors.New("perf.data tracing data does not start as perf writes it")
	}
	b = b[len(tracingMagic):]
	i := bytes.IndexByte(b, 0)
	if i < 0 || len(b) < i+1+6 {
		return nil, bad
	}
	b = b[i+1:]
	var bo binary.ByteOrder = binary.LittleEndian
	if b[0] != 0 {
		bo = binary.BigEndian
	}
	b = b[6:] // endian, long size, page size
	var err error
	section := func(name string) {
		if err != nil {
			return
		}
		if !bytes.HasPrefix(b, []byte(name+"\x00")) || len(b) < len(name)+1+8 {
			err = bad
			return
		}
		b = b[len(name)+1:]
		n := bo.Uint64(b)
		b = b[8:]
		if n > uint64(len(b)) {
			err = bad
			return
		}
		b = b[n:]
	}
	section("header_page")
	section("header_event")
	if err != nil {
		return nil, err
	}
	u32 := func() (int, bool) {
		if len(b) < 4 {
			return 0, false
		}
		n := bo.Uint32(b)
		b = b[4:]
		return int(n), n <= maxFormats
	}
	format := func() ([]byte, bool) {
		if len(b) < 8 {
			return nil, false
		}
		n := bo.Uint64(b)
		b = b[8:]
		if n > uint64(len(b)) {
			return nil, false
		}
		f := b[:n]
		b = b[n:]
		return f, true
	}
	nftrace, ok := u32()
	if !ok {
		return nil, bad
	}
	for k := 0; k < nftrace; k++ {
		if _, ok := format(); !ok {
			return nil, bad
		}
	}
	out := map[uint64]*perfrecord.TraceFormat{}
	nsys, ok := u32()
	if !ok {
		return nil, bad
	}
	for k := 0; k < nsys; k++ {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return out, bad
		}
		sys := string(b[:i])
		b = b[i+1:]
		nev, ok := u32()
		if !ok {
			return out, bad
		}
		for e := 0; e < nev; e++ {
			text, ok := format()
			if !ok {
				return out, bad
			}
			f, err := perfrecord.ParseTraceFormat(text)
			if err != nil || f.ID == 0 {
				continue // one event perf could not describe: the others still read
			}
			f.Name = sys + ":" + f.Name
			out[f.ID] = f
		}
	}
	return out, nil
}
