// Package etwevent decodes Event Tracing for Windows events: the headers ETW
// writes into its buffers and the payloads of the kernel and
// KernelTraceControl events a CPU profiler needs (sampled profile, stack
// walks and cached stack keys, process, thread and image loads with their
// rundowns, and image identities). It is platform-neutral: it walks the
// buffers of an ETL file on any OS (WalkETL, for record/etl), and a live
// Windows backend can feed it the payloads its real-time session delivers:
// it fills an Event from the EVENT_RECORD (Provider from ProviderId; ID,
// Version and Opcode from the descriptor; Ptr64 from
// EVENT_HEADER_FLAG_64_BIT_HEADER; PID, TID, TimeStamp; Payload from
// UserData), and KindOf and the Decode functions then work as for a file.
package etwevent

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"
)

// Header types: byte 2 of an event's marker when byte 3 is 0xC0.
const (
	HeaderSystem32      = 1
	HeaderSystem64      = 2
	HeaderCompact32     = 3
	HeaderCompact64     = 4
	HeaderFull32        = 10
	HeaderInstance32    = 11
	HeaderPerfInfo32    = 16
	HeaderPerfInfo64    = 17
	HeaderEventHeader32 = 18
	HeaderEventHeader64 = 19
	HeaderFull64        = 20
	HeaderInstance64    = 21
)

// GUID is a Windows GUID in its in-memory (little-endian fields) layout.
type GUID [16]byte

// String formats g the usual way, 8-4-4-4-12 lowercase.
func (g GUID) String() string {
	le := binary.LittleEndian
	return fmt.Sprintf("%08x-%04x-%04x-%x-%x", le.Uint32(g[0:]), le.Uint16(g[4:]), le.Uint16(g[6:]), g[8:10], g[10:])
}

// ParseGUID parses the 8-4-4-4-12 form; it panics on malformed input and
// is meant for constants.
func ParseGUID(s string) GUID {
	var a uint32
	var b, c, d uint16
	var e uint64
	if _, err := fmt.Sscanf(s, "%08x-%04x-%04x-%04x-%012x", &a, &b, &c, &d, &e); err != nil {
		panic("etw: bad GUID " + s)
	}
	var g GUID
	binary.LittleEndian.PutUint32(g[0:], a)
	binary.LittleEndian.PutUint16(g[4:], b)
	binary.LittleEndian.PutUint16(g[6:], c)
	binary.BigEndian.PutUint16(g[8:], d)
	for i := 0; i < 6; i++ {
		g[10+i] = byte(e >> (8 * (5 - i)))
	}
	return g
}

// Event is one decoded event header with its payload.
type Event struct {
	HeaderType uint8
	// Ptr64 says the payload's pointers are 8 bytes. It is per event: a
	// 32-bit provider's events in a 64-bit trace have 4-byte pointers.
	Ptr64 bool
	// Classic kernel events (SYSTEM, COMPACT, PERFINFO headers) carry a
	// HookID: group in the high byte, type (opcode) in the low byte.
	// Others carry a provider GUID and an opcode (and, for EVENT_HEADER,
	// an event id).
	HookID   uint16
	Provider GUID
	Opcode   uint8
	ID       uint16 // EVENT_HEADER event id
	Version  uint8  // the payload's layout version
	// PID and TID from the header; PERFINFO headers have neither (-1).
	PID, TID int64
	Time     int64 // raw timestamp (QPC ticks for clock type 1)
	Payload  []byte
	// Stack is an EVENT_HEADER's stack-trace extended item, leaf first.
	Stack []uint64
}

// Classic reports whether e is a classic kernel event keyed by HookID.
func (e *Event) Classic() bool {
	switch e.HeaderType {
	case HeaderSystem32, HeaderSystem64, HeaderCompact32, HeaderCompact64, HeaderPerfInfo32, HeaderPerfInfo64:
		return true
	}
	return false
}

// Group and Type split a classic event's HookID.
func (e *Event) Group() uint8 { return uint8(e.HookID >> 8) }

// Type is the low byte of HookID, the event's opcode.
func (e *Event) Type() uint8 { return uint8(e.HookID) }

// ParseEvent decodes the event at the start of b. It returns the event and
// how many bytes to advance to the next one (8-aligned), or ok false when b
// does not start with an event (padding, the end of the buffer's data, or
// garbage).
func ParseEvent(b []byte) (e Event, next int, ok bool) {
	if len(b) < 8 || b[3] != 0xC0 {
		return e, 0, false
	}
	le := binary.LittleEndian
	e.HeaderType = b[2]
	var size, hdr int
	switch e.HeaderType {
	case HeaderSystem32, HeaderSystem64, HeaderCompact32, HeaderCompact64:
		hdr = 0x20
		if e.HeaderType >= HeaderCompact32 {
			hdr = 0x18
		}
		if len(b) < hdr {
			return e, 0, false
		}
		size = int(le.Uint16(b[4:]))
		e.Version = b[0]
		e.HookID = le.Uint16(b[6:])
		e.TID = int64(le.Uint32(b[8:]))
		e.PID = int64(le.Uint32(b[12:]))
		e.Time = int64(le.Uint64(b[16:]))
		e.Ptr64 = e.HeaderType == HeaderSystem64 || e.HeaderType == HeaderCompact64
		e.Opcode = e.Type()
	case HeaderPerfInfo32, HeaderPerfInfo64:
		hdr = 0x10
		if len(b) < hdr {
			return e, 0, false
		}
		size = int(le.Uint16(b[4:]))
		e.Version = b[0]
		e.HookID = le.Uint16(b[6:])
		e.Time = int64(le.Uint64(b[8:]))
		e.PID, e.TID = -1, -1
		e.Ptr64 = e.HeaderType == HeaderPerfInfo64
		e.Opcode = e.Type()
	case HeaderFull32, HeaderFull64, HeaderInstance32, HeaderInstance64:
		hdr = 0x30
		if e.HeaderType == HeaderInstance32 || e.HeaderType == HeaderInstance64 {
			hdr = 0x38 // FULL header plus instance id and parent instance id
		}
		if len(b) < hdr {
			return e, 0, false
		}
		size = int(le.Uint16(b[0:]))
		e.Opcode = b[4]
		e.Version = b[6]
		e.TID = int64(le.Uint32(b[8:]))
		e.PID = int64(le.Uint32(b[12:]))
		e.Time = int64(le.Uint64(b[16:]))
		copy(e.Provider[:], b[24:40])
		e.Ptr64 = e.HeaderType == HeaderFull64 || e.HeaderType == HeaderInstance64
	case HeaderEventHeader32, HeaderEventHeader64:
		hdr = 0x50
		if len(b) < hdr {
			return e, 0, false
		}
		size = int(le.Uint16(b[0:]))
		flags := le.Uint16(b[4:])
		e.TID = int64(le.Uint32(b[8:]))
		e.PID = int64(le.Uint32(b[12:]))
		e.Time = int64(le.Uint64(b[16:]))
		copy(e.Provider[:], b[24:40])
		e.ID = le.Uint16(b[40:])
		e.Version = b[42]
		e.Opcode = b[45]
		e.Ptr64 = e.HeaderType == HeaderEventHeader64
		if size < hdr || size > len(b) {
			return e, 0, false
		}
		if flags&1 != 0 { // EVENT_HEADER_FLAG_EXTENDED_INFO
			for {
				if hdr+8 > size {
					return e, 0, false
				}
				item := b[hdr:]
				total := int(le.Uint16(item[0:]))
				typ := le.Uint16(item[2:])
				link := le.Uint16(item[4:])
				dsize := int(le.Uint16(item[6:]))
				if total < 8 || hdr+total > size || 8+dsize > total {
					return e, 0, false
				}
				data := item[8 : 8+dsize]
				switch {
				case typ == 6 && len(data) >= 8: // STACK_TRACE64: match id + frames
					for i := 8; i+8 <= len(data); i += 8 {
						e.Stack = append(e.Stack, le.Uint64(data[i:]))
					}
				case typ == 5 && len(data) >= 8: // STACK_TRACE32
					for i := 8; i+4 <= len(data); i += 4 {
						e.Stack = append(e.Stack, uint64(le.Uint32(data[i:])))
					}
				}
				hdr += total
				if link&1 == 0 {
					break
				}
			}
		}
	default:
		// A header gprof has no use for (WPP messages, timed or WNODE
		// events): skip it by the size at its start, as the others.
		hdr = 8
		size = int(le.Uint16(b[0:]))
	}
	if size < hdr || size > len(b) {
		return e, 0, false
	}
	e.Payload = b[hdr:size]
	next = (size + 7) &^ 7
	if next > len(b) {
		next = len(b)
	}
	return e, next, true
}

// reader reads a payload field by field; reading past the end yields
// zeros and sets bad, so decoders check once at the end.
type reader struct {
	b     []byte
	off   int
	ptr64 bool
	bad   bool
}

func (r *reader) u16() uint16 {
	if r.off+2 > len(r.b) {
		r.bad = true
		r.off = len(r.b)
		return 0
	}
	v := binary.LittleEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v
}

func (r *reader) u32() uint32 {
	if r.off+4 > len(r.b) {
		r.bad = true
		r.off = len(r.b)
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *reader) u64() uint64 {
	if r.off+8 > len(r.b) {
		r.bad = true
		r.off = len(r.b)
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func (r *reader) ptr() uint64 {
	if r.ptr64 {
		return r.u64()
	}
	return uint64(r.u32())
}

func (r *reader) skip(n int) {
	if n < 0 || r.off+n > len(r.b) {
		r.bad = true
		r.off = len(r.b)
		return
	}
	r.off += n
}

func (r *reader) guid() GUID {
	var g GUID
	if r.off+16 > len(r.b) {
		r.bad = true
		r.off = len(r.b)
		return g
	}
	copy(g[:], r.b[r.off:])
	r.off += 16
	return g
}

// ansi reads a NUL-terminated 8-bit string (or the rest of the payload).
func (r *reader) ansi() string {
	b := r.b[r.off:]
	for i, c := range b {
		if c == 0 {
			r.off += i + 1
			return string(b[:i])
		}
	}
	r.off = len(r.b)
	return string(b)
}

// utf16 reads a NUL-terminated UTF-16LE string (or the rest of the payload).
func (r *reader) utf16() string {
	var u []uint16
	for r.off+2 <= len(r.b) {
		c := binary.LittleEndian.Uint16(r.b[r.off:])
		r.off += 2
		if c == 0 {
			return string(utf16.Decode(u))
		}
		u = append(u, c)
	}
	r.off = len(r.b)
	return string(utf16.Decode(u))
}
