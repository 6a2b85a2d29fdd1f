package etwevent

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// This file reads Event Trace Log files (.etl), as xperf, WPR and PerfView
// write them: it walks the file's buffers, decompressing those written in
// compressed mode, and hands each event to the caller, who decodes it
// like a live session's.

const bufferHeaderSize = 0x48

// Buffer flags (WMI_BUFFER_HEADER.BufferFlag).
const (
	flagCompressed = 0x40
	flagProcIndex  = 0x20
)

// SniffETL reports whether head, the start of a file, is an ETL file: a
// WMI buffer header whose first event is the trace's logfile header (a
// SYSTEM event with HookId 0). It needs ETLSniffSize bytes.
func SniffETL(head []byte) bool {
	if len(head) < bufferHeaderSize+0x20 {
		return false
	}
	le := binary.LittleEndian
	size := le.Uint32(head)
	saved := le.Uint32(head[4:])
	ev := head[bufferHeaderSize:]
	return size >= bufferHeaderSize+0x20 && saved <= size &&
		ev[3] == 0xC0 && (ev[2] == HeaderSystem32 || ev[2] == HeaderSystem64) &&
		le.Uint16(ev[6:]) == 0 && le.Uint16(ev[4:]) >= 0x20+0x100
}

// ETLSniffSize is how much of a file SniffETL needs.
const ETLSniffSize = bufferHeaderSize + 0x20 + 0x24

// LogHeader is what gprof uses of TRACE_LOGFILE_HEADER, the payload of an
// ETL file's first event (KindHeader).
type LogHeader struct {
	PointerSize   int
	CPUs          int
	Major, Minor  int
	Build         int
	EventsLost    uint64
	BuffersLost   uint64
	PerfFreq      int64
	StartFileTime int64 // FILETIME of the trace's start
	ClockType     uint32
	CPUMHz        uint32
	// HeaderTime is the header event's own timestamp, on the events'
	// clock, at StartFileTime.
	HeaderTime     int64
	LoggerModeMask uint32
}

// ParseLogHeader decodes the logfile header event.
func ParseLogHeader(e *Event) (h LogHeader, err error) {
	p := e.Payload
	ptr := 4
	if e.Ptr64 {
		ptr = 8
	}
	tail := 56 + 2*ptr + 172
	tail = (tail + 7) &^ 7
	if len(p) < tail+32 {
		return h, errors.New("logfile header too short")
	}
	le := binary.LittleEndian
	h.Major, h.Minor = int(p[4]), int(p[5])
	h.Build = int(le.Uint32(p[8:]))
	h.CPUs = int(le.Uint32(p[12:]))
	h.LoggerModeMask = le.Uint32(p[32:])
	h.PointerSize = int(le.Uint32(p[44:]))
	h.EventsLost = uint64(le.Uint32(p[48:]))
	h.CPUMHz = le.Uint32(p[52:])
	h.PerfFreq = int64(le.Uint64(p[tail+8:]))
	h.StartFileTime = int64(le.Uint64(p[tail+16:]))
	h.ClockType = le.Uint32(p[tail+24:])
	h.BuffersLost = uint64(le.Uint32(p[tail+28:]))
	h.HeaderTime = e.Time
	if h.PointerSize != 4 && h.PointerSize != 8 {
		h.PointerSize = ptr
	}
	return h, nil
}

// TicksPerSecond is the frequency of the trace's event timestamps.
func (h *LogHeader) TicksPerSecond() int64 {
	switch h.ClockType {
	case 2: // system time: 100 ns units
		return 10_000_000
	case 3: // CPU cycle counter
		if h.CPUMHz > 0 {
			return int64(h.CPUMHz) * 1_000_000
		}
	}
	if h.PerfFreq > 0 {
		return h.PerfFreq
	}
	return 10_000_000
}

// maxBuffer bounds the size of one buffer, on disk or decompressed: ETW's
// own limit.
const maxBuffer = 16 << 20

// WalkETL calls fn for every event of every buffer of an ETL file, in file
// order, with the buffer's CPU and the buffer's index. It reads one buffer
// at a time. Events do not outlive the call: fn must copy what it keeps.
// A damaged buffer after the first loses its events, not the trace.
func WalkETL(r io.Reader, fn func(e *Event, cpu int, buf int)) error {
	r = bufio.NewReaderSize(r, 1<<16)
	le := binary.LittleEndian
	// A buffer decompresses to at most the session's buffer size, which
	// the logfile header (in the first, uncompressed buffer) gives.
	maxSaved := 1 << 20
	hdr := make([]byte, bufferHeaderSize)
	var scratch, data []byte
	for buf := 0; ; buf++ {
		if _, err := io.ReadFull(r, hdr); err != nil {
			if buf == 0 {
				return fmt.Errorf("cannot read the ETL file's first buffer: %w", err)
			}
			return nil // the end, or a truncated last buffer: keep what came before
		}
		size := int(le.Uint32(hdr))
		if size < bufferHeaderSize || size > maxBuffer {
			if buf == 0 {
				return fmt.Errorf("ETL buffer 0 has a bad size %d", size)
			}
			return nil // garbage after the last buffer
		}
		if cap(data) < size-bufferHeaderSize {
			data = make([]byte, size-bufferHeaderSize)
		}
		data = data[:size-bufferHeaderSize]
		if _, err := io.ReadFull(r, data); err != nil {
			if buf == 0 {
				return fmt.Errorf("the ETL file's first buffer is cut short: %w", err)
			}
			return nil
		}
		if buf == 0 && len(data) >= 0x24 {
			if n := int(le.Uint32(data[0x20:])); n >= 4096 && n <= maxBuffer {
				maxSaved = n
			}
		}
		saved := int(le.Uint32(hdr[4:]))
		flags := le.Uint16(hdr[0x34:])
		cpu := int(hdr[0x28])
		if flags&flagProcIndex != 0 {
			cpu = int(le.Uint16(hdr[0x28:]))
		}
		events := data
		if flags&flagCompressed != 0 {
			if saved < bufferHeaderSize || saved > maxSaved {
				continue
			}
			out, err := AppendXpress(scratch[:0], data, saved-bufferHeaderSize)
			if err != nil {
				continue // one bad buffer loses its events, not the trace
			}
			scratch, events = out, out
		} else {
			end := saved
			if end <= bufferHeaderSize || end > size {
				end = int(le.Uint32(hdr[8:])) // CurrentOffset
				if end <= bufferHeaderSize || end > size {
					end = size
				}
			}
			events = data[:end-bufferHeaderSize]
		}
		for p := 0; p < len(events); {
			e, n, ok := ParseEvent(events[p:])
			if !ok || n <= 0 {
				break
			}
			fn(&e, cpu, buf)
			p += n
		}
	}
}
