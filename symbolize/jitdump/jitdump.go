// Package jitdump reads the jitdump files JIT runtimes write for profilers
// (perf's format, tools/perf/Documentation/jitdump-specification.txt):
// CPython 3.12+ with -X perf_jit, V8 (node --perf-prof), JVM agents. Each
// piece of generated code is named by a code-load record; a debug-info
// record before it maps its addresses to source lines, an unwinding-info
// record before it carries the .eh_frame that unwinds it, and code-move
// records move it.
//
// A runtime appends to its dump while it runs and buffers its writes, so a
// dump read early may end in the middle of a record: what precedes it is
// kept. Nothing in a dump is trusted: sizes are checked against the file
// and the data read is bounded by it.
package jitdump

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Magic is the first word of a jitdump file, "JiTD" in the writer's byte
// order.
const Magic = 0x4A695444

// Record types.
const (
	recCodeLoad      = 0
	recCodeMove      = 1
	recDebugInfo     = 2
	recClose         = 3
	recUnwindingInfo = 4
)

const (
	headerMin = 40 // magic .. flags
	prefixLen = 16 // id, total_size, timestamp
)

// Header is the file header.
type Header struct {
	Version uint32
	// Machine is the ELF e_machine of the code (62 for x86-64, 183 for
	// arm64).
	Machine   uint32
	Pid       uint32
	Timestamp uint64
	Flags     uint64
}

// Code is one piece of generated code, as loaded or moved.
type Code struct {
	// Time is the record's timestamp (CLOCK_MONOTONIC ns, unless the
	// header's flags say otherwise).
	Time      uint64
	Pid, Tid  uint32
	Addr      uint64 // where the code starts
	Size      uint64
	Index     uint64 // the runtime's id for the code, kept across moves
	Name      string
	Lines     []Line // sorted by Addr; from the debug-info record before it
	EHFrame   []byte // .eh_frame for the code, or nil
	EHFrameAt uint64 // the address the .eh_frame's pc-relative pointers assume
}

// Line maps the code from Addr on (up to the next Line) to a source line.
type Line struct {
	Addr    uint64
	Line    int
	Discrim int
	File    string
}

// File is a parsed dump.
type File struct {
	Header Header
	// Code is every code load and move, in file order: later entries
	// describe newer code at their addresses.
	Code []Code
	// Closed reports that the runtime wrote its close record.
	Closed bool
	// Offset is where parsing stopped: the end of the last whole record.
	Offset int64

	sorted []int   // indexes into Code by Addr, built by Lookup
	next   pending // what the records read so far say of the next load
}

var errNotJitdump = errors.New("not a jitdump file (no JiTD magic)")

// maxRecord bounds one record: a runtime's largest functions are a few
// megabytes of code.
const maxRecord = 256 << 20

// Read reads the dump at path.
func Read(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse reads a whole dump from data. A record cut short at the end (a
// dump still being written) ends the parse without an error.
func Parse(data []byte) (*File, error) {
	f := &File{}
	if err := f.parse(data); err != nil {
		return nil, err
	}
	return f, nil
}

// Continue parses the records of data, the same file as read before but
// maybe longer, past f.Offset. It lets a reader follow a dump that grows.
func (f *File) Continue(data []byte) error {
	if f.Offset == 0 {
		return f.parse(data)
	}
	if int64(len(data)) < f.Offset {
		return errors.New("jitdump file shrank")
	}
	return f.records(data, f.order(data))
}

func (f *File) order(data []byte) binary.ByteOrder {
	if binary.BigEndian.Uint32(data) == Magic {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

func (f *File) parse(data []byte) error {
	if len(data) < 4 {
		return errNotJitdump
	}
	var bo binary.ByteOrder
	switch {
	case binary.LittleEndian.Uint32(data) == Magic:
		bo = binary.LittleEndian
	case binary.BigEndian.Uint32(data) == Magic:
		bo = binary.BigEndian
	default:
		return errNotJitdump
	}
	if len(data) < headerMin {
		return errors.New("jitdump header cut short")
	}
	size := bo.Uint32(data[8:])
	if size < headerMin || uint64(size) > uint64(len(data)) {
		return fmt.Errorf("jitdump header size %d out of range", size)
	}
	f.Header = Header{
		Version:   bo.Uint32(data[4:]),
		Machine:   bo.Uint32(data[12:]),
		Pid:       bo.Uint32(data[20:]),
		Timestamp: bo.Uint64(data[24:]),
		Flags:     bo.Uint64(data[32:]),
	}
	f.Offset = int64(size)
	return f.records(data, bo)
}

// pending is what records before a code load say about it.
type pending struct {
	lines     []Line
	linesAt   uint64 // the code address the debug record names
	eh        []byte
	ehAt      uint64 // offset of the eh_frame from the code's start
	ehRelated bool
}

func (f *File) records(data []byte, bo binary.ByteOrder) error {
	next := &f.next
	off := f.Offset
	for !f.Closed && off+prefixLen <= int64(len(data)) {
		id := bo.Uint32(data[off:])
		size := int64(bo.Uint32(data[off+4:]))
		if size < prefixLen || size > maxRecord {
			return fmt.Errorf("jitdump record at %d: size %d out of range", off, size)
		}
		if off+size > int64(len(data)) {
			break // still being written
		}
		rec := data[off : off+size]
		t := bo.Uint64(rec[8:])
		body := rec[prefixLen:]
		switch id {
		case recCodeLoad:
			c, ok := codeLoad(body, bo)
			if !ok {
				return fmt.Errorf("jitdump code load at %d is malformed", off)
			}
			c.Time = t
			if next.linesAt == c.Addr || next.linesAt == 0 {
				c.Lines = placeLines(next.lines, c.Addr, c.Size)
			}
			if next.ehRelated {
				c.EHFrame, c.EHFrameAt = next.eh, c.Addr+next.ehAt
			}
			f.Code = append(f.Code, c)
			*next = pending{}
		case recCodeMove:
			if len(body) < 48 {
				return fmt.Errorf("jitdump code move at %d is malformed", off)
			}
			f.move(t, body, bo)
		case recDebugInfo:
			at, lines, ok := debugInfo(body, bo)
			if !ok {
				return fmt.Errorf("jitdump debug info at %d is malformed", off)
			}
			next.lines, next.linesAt = lines, at
		case recUnwindingInfo:
			eh, ehAt, ok := unwindingInfo(body, bo)
			if !ok {
				return fmt.Errorf("jitdump unwinding info at %d is malformed", off)
			}
			next.eh, next.ehAt, next.ehRelated = eh, ehAt, eh != nil
		case recClose:
			f.Closed = true
		}
		// Other record types are newer than this reader: skipped by size.
		off += size
		f.Offset = off
	}
	f.sorted = nil
	return nil
}

// codeLoad reads a JIT_CODE_LOAD body: pid, tid, vma, code address, size,
// index, the name (NUL-terminated), then the code bytes.
func codeLoad(b []byte, bo binary.ByteOrder) (Code, bool) {
	if len(b) < 40 {
		return Code{}, false
	}
	c := Code{
		Pid:   bo.Uint32(b[0:]),
		Tid:   bo.Uint32(b[4:]),
		Addr:  bo.Uint64(b[16:]),
		Size:  bo.Uint64(b[24:]),
		Index: bo.Uint64(b[32:]),
	}
	rest := b[40:]
	n := bytes.IndexByte(rest, 0)
	if n < 0 || c.Addr+c.Size < c.Addr {
		return Code{}, false
	}
	// The code bytes follow; a writer may pad the record, but the code
	// must fit.
	if uint64(len(rest)-n-1) < c.Size {
		return Code{}, false
	}
	c.Name = string(rest[:n])
	return c, true
}

// elfTextOffset is where 'perf inject --jit' puts a code's bytes in the
// ELF file it makes of it, right after the ELF header.
const elfTextOffset = 0x40

// placeLines returns lines with addresses in the code at addr, size
// bytes long, or nil when they do not fit it. V8 writes its line
// addresses elfTextOffset past the code's (perf turns them into addresses
// in the ELF file it makes, where the code starts there); other writers
// give the code's own. A table whose first line starts exactly
// elfTextOffset into the code is V8's. A table with a line outside the
// code is broken (node 20 overwrites the start of a script's file name
// with other bytes, NULs included, so the entries after it are misread):
// no lines are better than wrong ones.
func placeLines(lines []Line, addr, size uint64) []Line {
	if len(lines) == 0 {
		return nil
	}
	shift := uint64(0)
	if lines[0].Addr == addr+elfTextOffset {
		shift = elfTextOffset
	}
	for i := range lines {
		a := lines[i].Addr - shift
		if a < addr || a-addr > size || !utf8.ValidString(lines[i].File) {
			return nil
		}
		lines[i].Addr = a
	}
	return lines
}

// move records a JIT_CODE_MOVE: pid, tid, vma, old address, new address,
// size, index. The moved code keeps its name, lines and unwind
// information, shifted to the new address.
func (f *File) move(t uint64, b []byte, bo binary.ByteOrder) {
	from, to := bo.Uint64(b[16:]), bo.Uint64(b[24:])
	size, index := bo.Uint64(b[32:]), bo.Uint64(b[40:])
	if to+size < to {
		return
	}
	for i := len(f.Code) - 1; i >= 0; i-- {
		c := f.Code[i]
		if c.Addr != from || c.Index != index {
			continue
		}
		c.Time, c.Addr, c.Size = t, to, size
		c.Pid, c.Tid = bo.Uint32(b[0:]), bo.Uint32(b[4:])
		if len(c.Lines) > 0 {
			lines := make([]Line, len(c.Lines))
			for j, l := range c.Lines {
				l.Addr = l.Addr - from + to
				lines[j] = l
			}
			c.Lines = lines
		}
		if c.EHFrame != nil {
			c.EHFrameAt = c.EHFrameAt - from + to
		}
		f.Code = append(f.Code, c)
		return
	}
}

// debugInfo reads a JIT_CODE_DEBUG_INFO body: the code address, the
// number of entries, then entries of address, line, discriminator and a
// NUL-terminated file name. A name of "\xff\0" repeats the previous one.
func debugInfo(b []byte, bo binary.ByteOrder) (uint64, []Line, bool) {
	if len(b) < 16 {
		return 0, nil, false
	}
	at, n := bo.Uint64(b[0:]), bo.Uint64(b[8:])
	b = b[16:]
	// Each entry takes 17 bytes at least, so n is bounded by the record.
	if n > uint64(len(b))/17 {
		return 0, nil, false
	}
	lines := make([]Line, 0, n)
	prev := ""
	for range n {
		if len(b) < 17 {
			return 0, nil, false
		}
		l := Line{Addr: bo.Uint64(b[0:]), Line: int(bo.Uint32(b[8:])), Discrim: int(bo.Uint32(b[12:]))}
		b = b[16:]
		e := bytes.IndexByte(b, 0)
		if e < 0 {
			return 0, nil, false
		}
		if name := b[:e]; len(name) == 1 && name[0] == 0xff {
			l.File = prev
		} else {
			l.File = string(name)
		}
		prev = l.File
		b = b[e+1:]
		lines = append(lines, l)
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].Addr < lines[j].Addr })
	return at, lines, true
}

// unwindingInfo reads a JIT_CODE_UNWINDING_INFO body: the unwind data's
// size, the .eh_frame_hdr's size within it, the mapped size, then the
// data: the .eh_frame, and after it the .eh_frame_hdr. It returns the
// .eh_frame and where it sits relative to the code it describes, which
// the header's table gives: its first entry is the code's start. A record
// with no frame (a runtime that has no unwind information for the code
// writes an empty one) gives nil.
func unwindingInfo(b []byte, bo binary.ByteOrder) (eh []byte, ehAt uint64, ok bool) {
	if len(b) < 24 {
		return nil, 0, false
	}
	size, hdrSize := bo.Uint64(b[0:]), bo.Uint64(b[8:])
	b = b[24:]
	if size > uint64(len(b)) || hdrSize > size {
		return nil, 0, false
	}
	data := b[:size]
	eh, hdr := data[:size-hdrSize], data[size-hdrSize:]
	if len(eh) < 8 || len(hdr) < 8 || hdr[0] != 1 {
		return nil, 0, true
	}
	// The header sits at H, the .eh_frame at H-len(eh). Its pointers are
	// relative to H (datarel) or to themselves (pcrel); the table's
	// first entry is the start of the code.
	r := ptrReader{b: hdr, off: 4, bo: bo}
	ehPtr, ok1 := r.ptr(hdr[1])
	count, ok2 := r.ptr(hdr[2])
	if !ok1 || !ok2 || count == 0 || int64(ehPtr) != -int64(len(eh)) {
		return nil, 0, true
	}
	first, ok3 := r.ptr(hdr[3])
	if !ok3 || int64(first) >= 0 || uint64(-int64(first)) < uint64(len(eh)) {
		return nil, 0, true
	}
	// H = code + (-first); the .eh_frame starts len(eh) before H.
	return bytes.Clone(eh), uint64(-int64(first)) - uint64(len(eh)), true
}

// ptrReader decodes the .eh_frame_hdr's DW_EH_PE pointers as offsets from
// the header's start.
type ptrReader struct {
	b   []byte
	off int
	bo  binary.ByteOrder
}

func (r *ptrReader) ptr(enc byte) (uint64, bool) {
	if enc == 0xff { // DW_EH_PE_omit
		return 0, false
	}
	at := uint64(r.off)
	var v uint64
	switch enc & 0x0f {
	case 0x03: // udata4
		if r.off+4 > len(r.b) {
			return 0, false
		}
		v = uint64(r.bo.Uint32(r.b[r.off:]))
		r.off += 4
	case 0x0b: // sdata4
		if r.off+4 > len(r.b) {
			return 0, false
		}
		v = uint64(int64(int32(r.bo.Uint32(r.b[r.off:]))))
		r.off += 4
	case 0x04, 0x0c, 0x00: // udata8, sdata8, absptr
		if r.off+8 > len(r.b) {
			return 0, false
		}
		v = r.bo.Uint64(r.b[r.off:])
		r.off += 8
	default:
		return 0, false
	}
	switch enc & 0x70 {
	case 0x00: // a count, or an absolute pointer we cannot place
		if enc&0x0f == 0x00 {
			return 0, false
		}
		return v, true
	case 0x10: // pcrel
		return v + at, true
	case 0x30: // datarel: from the header's start
		return v, true
	}
	return 0, false
}

// Lookup returns the code covering addr: the newest load or move there.
func (f *File) Lookup(addr uint64) (*Code, bool) {
	if f == nil {
		return nil, false
	}
	if f.sorted == nil {
		f.sorted = make([]int, len(f.Code))
		for i := range f.sorted {
			f.sorted[i] = i
		}
		sort.SliceStable(f.sorted, func(i, j int) bool { return f.Code[f.sorted[i]].Addr < f.Code[f.sorted[j]].Addr })
	}
	s := f.sorted
	i := sort.Search(len(s), func(i int) bool { return f.Code[s[i]].Addr > addr }) - 1
	best := -1
	// Code that was replaced may overlap newer code; look back a little
	// for the newest entry covering addr.
	for j := i; j >= 0 && j > i-16; j-- {
		c := &f.Code[s[j]]
		if addr-c.Addr < max(c.Size, 1) && s[j] > best {
			best = s[j]
		}
	}
	if best < 0 {
		return nil, false
	}
	return &f.Code[best], true
}

// LineAt returns the source line of addr within c, if its debug info
// covers it.
func (c *Code) LineAt(addr uint64) (Line, bool) {
	i := sort.Search(len(c.Lines), func(i int) bool { return c.Lines[i].Addr > addr }) - 1
	if i < 0 {
		return Line{}, false
	}
	return c.Lines[i], true
}

// namePattern matches the file names runtimes give their dumps:
// jit-PID.dump, in /tmp (CPython) or the working directory (V8).
var namePattern = regexp.MustCompile(`(^|/)jit-([0-9]+)\.dump$`)

// PidOfPath returns the process id a dump's file name carries, if path
// names a jitdump file.
func PidOfPath(path string) (int, bool) {
	m := namePattern.FindStringSubmatch(path)
	if m == nil {
		return 0, false
	}
	pid, err := strconv.Atoi(m[2])
	return pid, err == nil
}

// DefaultPath is where CPython writes the dump of process pid, and where
// perf looks first.
func DefaultPath(pid int) string { return "/tmp/jit-" + strconv.Itoa(pid) + ".dump" }
