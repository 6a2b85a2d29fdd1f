// Package etl reads Event Trace Log files (.etl), as xperf, WPR and
// PerfView write them, into gprof's profile model, on any OS and in pure
// Go. It walks the file's buffers (decompressing those written in
// compressed mode), hands each event to package etw's decoders, and
// assembles processes, threads, images with their identities, and sampled
// stacks.
package etl

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/gprof-dev/gprof/etw"
	"github.com/gprof-dev/gprof/profile"
)

const bufferHeaderSize = 0x48

// Buffer flags (WMI_BUFFER_HEADER.BufferFlag).
const (
	flagCompressed = 0x40
	flagProcIndex  = 0x20
)

// Sniff reports whether head, the start of a file, is an ETL file: a WMI
// buffer header whose first event is the trace's logfile header (a
// SYSTEM event with HookId 0).
func Sniff(head []byte) bool {
	if len(head) < bufferHeaderSize+0x20 {
		return false
	}
	le := binary.LittleEndian
	size := le.Uint32(head)
	saved := le.Uint32(head[4:])
	ev := head[bufferHeaderSize:]
	return size >= bufferHeaderSize+0x20 && saved <= size &&
		ev[3] == 0xC0 && (ev[2] == etw.HeaderSystem32 || ev[2] == etw.HeaderSystem64) &&
		le.Uint16(ev[6:]) == 0 && le.Uint16(ev[4:]) >= 0x20+0x100
}

// logHeader is what gprof uses of TRACE_LOGFILE_HEADER.
type logHeader struct {
	pointerSize    int
	cpus           int
	major, minor   int
	build          int
	eventsLost     uint64
	buffersLost    uint64
	perfFreq       int64
	startFileTime  int64
	clockType      uint32
	cpuMHz         uint32
	headerTime     int64
	loggerModeMask uint32
}

func parseLogHeader(e *etw.Event) (h logHeader, err error) {
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
	h.major, h.minor = int(p[4]), int(p[5])
	h.build = int(le.Uint32(p[8:]))
	h.cpus = int(le.Uint32(p[12:]))
	h.loggerModeMask = le.Uint32(p[32:])
	h.pointerSize = int(le.Uint32(p[44:]))
	h.eventsLost = uint64(le.Uint32(p[48:]))
	h.cpuMHz = le.Uint32(p[52:])
	h.perfFreq = int64(le.Uint64(p[tail+8:]))
	h.startFileTime = int64(le.Uint64(p[tail+16:]))
	h.clockType = le.Uint32(p[tail+24:])
	h.buffersLost = uint64(le.Uint32(p[tail+28:]))
	h.headerTime = e.Time
	if h.pointerSize != 4 && h.pointerSize != 8 {
		h.pointerSize = ptr
	}
	return h, nil
}

// ticksPerSecond is the frequency of the trace's event timestamps.
func (h *logHeader) ticksPerSecond() int64 {
	switch h.clockType {
	case 2: // system time: 100 ns units
		return 10_000_000
	case 3: // CPU cycle counter
		if h.cpuMHz > 0 {
			return int64(h.cpuMHz) * 1_000_000
		}
	}
	if h.perfFreq > 0 {
		return h.perfFreq
	}
	return 10_000_000
}

// Options selects what Read keeps.
type Options struct{}

// Read reads an ETL file. It reads one buffer at a time: what it keeps is
// the decoded events a profile needs, not the file.
func Read(r io.Reader) (*profile.Profile, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	head, _ := br.Peek(sniffSize)
	if !Sniff(head) {
		return nil, errors.New("not an ETL file: no WMI buffer header with a logfile header")
	}
	b := newBuilder()
	if err := walk(br, b.event); err != nil {
		return nil, err
	}
	if !b.haveHeader {
		return nil, errors.New("ETL file has no logfile header")
	}
	p := b.profile()
	const how = "record it with the kernel provider's PROC_THREAD, LOADER and PROFILE flags (xperf -on PROC_THREAD+LOADER+PROFILE -stackwalk Profile, or WPR's CPU profile)"
	switch {
	case b.samples == 0:
		return nil, errors.New("the ETL trace has no CPU samples (kernel PerfInfo SampledProfile events): " + how)
	case len(p.Processes) == 0:
		return nil, errors.New("the ETL trace has CPU samples but no kernel thread events to tell whose they are: " + how)
	}
	return p, nil
}

// sniffSize is how much of the file Sniff needs.
const sniffSize = bufferHeaderSize + 0x20 + 0x24

// maxBuffer bounds the size of one buffer, on disk or decompressed: ETW's
// own limit.
const maxBuffer = 16 << 20

// Walk calls fn for every event of an ETL file, in file order, with the
// CPU of the buffer it was in. It is what Read decodes, for a consumer that
// wants the events themselves (the live ETW backend's tests replay a real
// trace through its translator with it). Events do not outlive the call.
func Walk(r io.Reader, fn func(e *etw.Event, cpu int)) error {
	return walk(bufio.NewReaderSize(r, 1<<16), func(e *etw.Event, cpu, _ int) { fn(e, cpu) })
}

// walk calls fn for every event of every buffer, in file order, with the
// buffer's CPU and the buffer's index. Events do not outlive the call:
// fn must copy what it keeps.
func walk(r io.Reader, fn func(e *etw.Event, cpu int, buf int)) error {
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
			out, err := etw.AppendXpress(scratch[:0], data, saved-bufferHeaderSize)
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
			e, n, ok := etw.ParseEvent(events[p:])
			if !ok || n <= 0 {
				break
			}
			fn(&e, cpu, buf)
			p += n
		}
	}
}
