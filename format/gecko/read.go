package gecko

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/gprof-dev/gprof/format/internal/lifecycle"
	"github.com/gprof-dev/gprof/format/internal/limit"
	"github.com/gprof-dev/gprof/profile"
	"github.com/klauspost/compress/gzip"
)

// ReadFile reads a Gecko profile file; see Read. Errors name the file.
func ReadFile(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Read reads a Gecko profile, gzipped or not: gprof's own output or one
// written by Firefox, of any version up to Version. Tables are read through
// their schemas, so the column layouts of older versions work too.
//
// Subprocess times are moved onto the top-level process's time base. Native
// frames ("0x…" locations) become addresses; every other location becomes a
// label. A thread's pid decides its process, so one Gecko process object
// holding several pids yields several processes sharing its libs, which
// are sorted and made disjoint with profile.SortLibs as the model requires.
//
// Input is untrusted: what Read holds is bounded by the file's size, and
// strings, numbers and nesting by what a profile needs (see package
// limit), so a damaged or hostile file fails fast with one line.
func Read(r io.Reader) (p *profile.Profile, err error) {
	file := limit.NewFile(r)
	br := bufio.NewReaderSize(file, 64<<10)
	var in io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("reading gzip header: %w", err)
		}
		ar := newAheadReader(limit.Inflated(zr, file))
		defer ar.Close()
		in = ar
	}
	s := newScanner(in, file)
	defer func() {
		if e := recover(); e != nil {
			se, ok := e.(*syntaxError)
			if !ok {
				panic(e)
			}
			p, err = nil, se
		}
	}()
	top := readTop(s)
	return top.build(s.meter)
}

// errNotGecko prefixes errors for input that is JSON but not a profile.
var errNotGecko = errors.New("not a Gecko profile")

// rawProfile is one Gecko process object as read, before it is turned into
// model processes; its times are still relative to its own meta.startTime.
type rawProfile struct {
	hasMeta        bool
	hasThreads     bool
	hasStart       bool
	version        int64
	processed      bool // meta.preprocessedProfileVersion: the other format
	start          int64
	shutdown       int64 // -1 when null or absent
	interval       int64
	product        string
	oscpu          string
	platform       string
	abi            string
	logicalCPUs    int
	cpuName        string
	profilingEnd   int64 // -1 when absent
	profilingStart int64
	categories     []profile.CategoryInfo
	cpuUnit        string
	lostEvents     uint64
	extra          map[string]string

	libs    []profile.Lib
	threads []*rawThread
	subs    []*rawProfile
	proc    *rawProcess
	symbols *profile.SymbolTable

	counters []profile.Counter // times relative to this profile object
	// counterImages holds, per counter, the index of the exec image it
	// belongs to when Write moved it to the image holding the process
	// track ("gprofImage"), else -1.
	counterImages []int
	overhead      *profile.Overhead
}

// rawProcess is the gprofProcess object Write adds to each process.
type rawProcess struct {
	pid        int
	name       string
	start, end int64
	exitCode   int
	exec       bool
}

type rawThread struct {
	name, processName string
	gprofName         *string
	gprofMain         *bool
	tid, pid          int64
	register          int64
	unregister        int64 // -1 when null

	frameLoc  []int32
	frameCat  []int32
	frameLine []int32

	stackPrefix []int32
	stackFrame  []int32

	sampleStack  column[int32]
	sampleTime   column[int64]
	sampleCPU    column[int64] // thousandths of the meta's CPU delta unit; -1 null
	sampleWeight column[int32]

	markers []rawMarker
	strings []string
}

type rawMarker struct {
	name       int32
	start, end int64 // -1 << 63 when null
	phase      profile.MarkerPhase
	cat        int32
	data       any
}

const nullTime = -1 << 63

// readTop reads the top-level value: a profile, or a {profile: …} wrapper
// as the old DevTools panel exported.
func readTop(s *scanner) *rawProfile {
	switch c := s.peek(); c {
	case '{':
	case '[':
		panic(&syntaxError{msg: errNotGecko.Error() + ": top level is an array, not an object", off: s.base + int64(s.pos)})
	default:
		s.unexpected(c, "looking for beginning of value")
	}
	p := readProfile(s, true)
	s.finish()
	if p.wrapped != nil {
		return p.wrapped
	}
	return &p.rawProfile
}

type topProfile struct {
	rawProfile
	wrapped *rawProfile
}

// Rough sizes of what the reader keeps per item of the input, counting what
// build makes of it, for charging the file's budget.
const (
	profileCost = int(unsafe.Sizeof(topProfile{})) + 512
	threadCost  = int(unsafe.Sizeof(rawThread{})+unsafe.Sizeof(profile.Thread{})) + 1024
	libCost     = 2 * int(unsafe.Sizeof(profile.Lib{}))
	sampleCost  = 2 * (4 + 8 + 8 + 4) // columns, and their final copy
	frameCost   = 8 + 4 + 64          // read, remapped, interned
	stackCost   = 8 + 4 + 48
	markerCost  = int(unsafe.Sizeof(rawMarker{})+unsafe.Sizeof(profile.Marker{})) + 16
	cellCost    = int(unsafe.Sizeof(cell{})) + 16 // a cell kept before its schema
)

func readProfile(s *scanner, top bool) *topProfile {
	s.hold(profileCost)
	p := &topProfile{rawProfile: rawProfile{shutdown: -1, profilingEnd: -1}}
	if !s.beginObject("a profile") {
		return p
	}
	for i := 0; s.field(i); i++ {
		switch string(s.key) {
		case "meta":
			p.readMeta(s)
		case "libs":
			if s.beginArray("libs") {
				for j := 0; s.elem(j); j++ {
					p.libs = append(p.libs, readLib(s))
				}
			}
		case "threads":
			p.hasThreads = true
			if s.beginArray("threads") {
				for j := 0; s.elem(j); j++ {
					p.threads = append(p.threads, readThread(s))
				}
			}
		case "processes":
			if s.beginArray("processes") {
				for j := 0; s.elem(j); j++ {
					if s.peek() == '{' {
						sub := readProfile(s, false)
						p.subs = append(p.subs, &sub.rawProfile)
					} else {
						s.skip()
					}
				}
			}
		case "gprofProcess":
			p.proc = readProcess(s)
		case "counters":
			if s.beginArray("counters") {
				for j := 0; s.elem(j); j++ {
					c, image := readCounter(s)
					p.counters = append(p.counters, c)
					p.counterImages = append(p.counterImages, image)
				}
			}
		case "profilerOverhead":
			p.overhead = readOverhead(s)
		case "gprofSymbols":
			p.symbols = readSymbols(s)
		case "profile":
			if top && s.peek() == '{' {
				p.wrapped = &readProfile(s, false).rawProfile
			} else {
				s.skip()
			}
		default:
			s.skip()
		}
	}
	return p
}

func (p *rawProfile) readMeta(s *scanner) {
	if !s.beginObject("meta") {
		return
	}
	p.hasMeta = true
	for i := 0; s.field(i); i++ {
		switch string(s.key) {
		case "version":
			p.version = s.number().int()
			if p.version > Version {
				s.fail("unsupported Gecko profile version %d (newest supported is %d)", p.version, Version)
			}
		case "preprocessedProfileVersion":
			if s.peek() != 'n' {
				s.fail("%v: this is a processed Firefox Profiler profile (version %d)", errNotGecko, s.number().int())
			}
			s.skip()
		case "startTime":
			p.start = s.number().fixed(6)
			p.hasStart = true
		case "shutdownTime":
			if !s.null() {
				p.shutdown = s.number().fixed(6)
			}
		case "interval":
			p.interval = s.number().fixed(6)
		case "product":
			p.product = s.keptString()
		case "oscpu":
			p.oscpu = s.keptString()
		case "platform":
			p.platform = s.keptString()
		case "abi":
			p.abi = s.keptString()
		case "CPUName":
			p.cpuName = s.keptString()
		case "logicalCPUs":
			if !s.null() {
				p.logicalCPUs = int(s.number().int())
			}
		case "profilingStartTime":
			if !s.null() {
				p.profilingStart = s.number().fixed(6)
			}
		case "profilingEndTime":
			if !s.null() {
				p.profilingEnd = s.number().fixed(6)
			}
		case "categories":
			p.categories = readCategories(s)
		case "sampleUnits":
			if s.beginObject("sampleUnits") {
				for j := 0; s.field(j); j++ {
					if string(s.key) == "threadCPUDelta" {
						p.cpuUnit = s.keptString()
					} else {
						s.skip()
					}
				}
			}
		case "gprof":
			if s.beginObject("meta.gprof") {
				for j := 0; s.field(j); j++ {
					switch string(s.key) {
					case "lostEvents":
						p.lostEvents, _ = s.number().uint()
					case "extra":
						if s.beginObject("meta.gprof.extra") {
							p.extra = map[string]string{}
							for k := 0; s.field(k); k++ {
								key := s.holdString(string(s.key))
								s.hold(32)
								p.extra[key] = s.keptString()
							}
						}
					default:
						s.skip()
					}
				}
			}
		default:
			s.skip()
		}
	}
}

func readCategories(s *scanner) []profile.CategoryInfo {
	var cats []profile.CategoryInfo
	if !s.beginArray("categories") {
		return nil
	}
	for i := 0; s.elem(i); i++ {
		s.hold(int(unsafe.Sizeof(profile.CategoryInfo{})))
		var c profile.CategoryInfo
		if s.beginObject("a category") {
			for j := 0; s.field(j); j++ {
				switch string(s.key) {
				case "name":
					c.Name = s.keptString()
				case "color":
					c.Color = s.keptString()
				default:
					s.skip()
				}
			}
		}
		cats = append(cats, c)
	}
	return cats
}

func readLib(s *scanner) profile.Lib {
	s.hold(libCost)
	var l profile.Lib
	if !s.beginObject("a lib") {
		return l
	}
	for i := 0; s.field(i); i++ {
		switch string(s.key) {
		case "start":
			l.Start = s.address()
		case "end":
			l.End = s.address()
		case "offset":
			l.Offset = s.address()
		case "name":
			l.Name = s.keptString()
		case "path":
			l.Path = s.keptString()
		case "debugName":
			l.DebugName = s.keptString()
		case "debugPath":
			l.DebugPath = s.keptString()
		case "breakpadId":
			l.BreakpadID = s.keptString()
		case "codeId":
			l.CodeID = s.keptString()
		case "arch":
			l.Arch = s.keptString()
		default:
			s.skip()
		}
	}
	return l
}

// address reads a lib address: a number, exact up to 2^64, or a hex string.
func (s *scanner) address() uint64 {
	at := s.offset()
	if s.peek() == '"' {
		b := s.stringBytes()
		v, err := strconv.ParseUint(strings.TrimPrefix(string(b), "0x"), 16, 64)
		if err != nil {
			s.failOff(at, "invalid address %q", b)
		}
		return v
	}
	n := s.number()
	v, ok := n.uint()
	if !ok {
		s.failOff(at, "invalid address")
	}
	return v
}

func readProcess(s *scanner) *rawProcess {
	pr := &rawProcess{end: -1, exitCode: -1}
	if !s.beginObject("gprofProcess") {
		return nil
	}
	for i := 0; s.field(i); i++ {
		switch string(s.key) {
		case "pid":
			pr.pid = int(s.intValue())
		case "name":
			pr.name = s.keptString()
		case "start":
			pr.start = s.number().fixed(6)
		case "end":
			pr.end = s.number().fixed(6)
		case "exitCode":
			pr.exitCode = int(s.number().int())
		case "exec":
			pr.exec = s.literal() == 't'
		default:
			s.skip()
		}
	}
	return pr
}

func readThread(s *scanner) *rawThread {
	s.hold(threadCost)
	t := &rawThread{unregister: -1}
	if !s.beginObject("a thread") {
		return t
	}
	for i := 0; s.field(i); i++ {
		switch string(s.key) {
		case "name":
			t.name = s.keptString()
		case "processName":
			t.processName = s.keptString()
		case "gprofName":
			n := s.keptString()
			t.gprofName = &n
		case "gprofMain":
			m := s.literal() == 't'
			t.gprofMain = &m
		case "tid":
			t.tid = s.idValue()
		case "pid":
			t.pid = s.idValue()
		case "registerTime":
			if !s.null() {
				t.register = s.number().fixed(6)
			}
		case "unregisterTime":
			if !s.null() {
				t.unregister = s.number().fixed(6)
			}
		case "samples":
			t.readSamples(s)
		case "markers":
			t.readMarkers(s)
		case "frameTable":
			t.readFrames(s)
		case "stackTable":
			t.readStacks(s)
		case "stringTable", "stringArray":
			if s.beginArray("the string table") {
				for j := 0; s.elem(j); j++ {
					t.strings = append(t.strings, s.keptString())
				}
			}
		default:
			s.skip()
		}
	}
	return t
}

// cell is one value of a table row. It holds no pointers, so filling
// cells costs no write barriers; other values go in table.vals.
type cell struct {
	kind byte // 0 null, 'n' number, 'b' bool, 'v' anything else
	n    num
}

var nullCell cell

// table reads a {schema, data} table, handing each row to row with cells
// found by column name, in the order names lists them.
type table struct {
	names []string
	idx   []int  // column of each name, -1 if absent
	need  []bool // by column: is it one of names
	cells []cell // by column, for the current row
	vals  []any  // by column, for cells of kind 'v'
	n     int
}

// val returns the value of a cell of kind 'v'.
func (t *table) val(k int) any {
	if i := t.idx[k]; i >= 0 && i < t.n && t.cells[i].kind == 'v' {
		return t.vals[i]
	}
	return nil
}

func (t *table) col(k int) *cell {
	if i := t.idx[k]; i >= 0 && i < t.n {
		return &t.cells[i]
	}
	return &nullCell
}

func (s *scanner) table(what string, names []string, handle func(t *table)) {
	t := &table{names: names}
	if !s.beginObject(what) {
		return
	}
	type row struct {
		cells []cell
		vals  []any
	}
	var pending []row // rows seen before the schema
	for i := 0; s.field(i); i++ {
		switch string(s.key) {
		case "schema":
			t.readSchema(s, what)
		case "data":
			if !s.beginArray(what + " data") {
				continue
			}
			for j := 0; s.elem(j); j++ {
				if t.idx == nil {
					t.readRow(s, what, true)
					s.hold(48 + t.n*cellCost)
					pending = append(pending, row{slices.Clone(t.cells[:t.n]), slices.Clone(t.vals[:t.n])})
					continue
				}
				t.readRow(s, what, false)
				handle(t)
			}
		default:
			s.skip()
		}
	}
	if pending != nil {
		if t.idx == nil {
			s.fail("%s has data but no schema", what)
		}
		for _, r := range pending {
			t.cells, t.vals = r.cells, r.vals
			t.n = len(r.cells)
			handle(t)
		}
	}
}

func (t *table) readSchema(s *scanner, what string) {
	t.idx = make([]int, len(t.names))
	for k := range t.idx {
		t.idx[k] = -1
	}
	if !s.beginObject(what + " schema") {
		return
	}
	for i := 0; s.field(i); i++ {
		k := slices.Index(t.names, string(s.key))
		at := s.offset()
		n := s.number()
		c, ok := n.uint()
		if !ok || c > 1000 {
			s.failOff(at, "invalid column index in %s schema", what)
		}
		if k >= 0 {
			t.idx[k] = int(c)
		}
	}
	maxCol := -1
	for _, c := range t.idx {
		maxCol = max(maxCol, c)
	}
	t.need = make([]bool, maxCol+1)
	for _, c := range t.idx {
		if c >= 0 {
			t.need[c] = true
		}
	}
	t.cells = make([]cell, maxCol+1)
	t.vals = make([]any, maxCol+1)
}

// readRow reads one row into t.cells; all says to keep every column,
// because the schema is not known yet.
func (t *table) readRow(s *scanner, what string, all bool) {
	if s.peek() != '[' {
		s.unexpected(s.peek(), "where a row of "+what+" should be an array")
	}
	s.pos++
	s.enter()
	t.n = 0
	for i := 0; s.elem(i); i++ {
		if !all && (i >= len(t.need) || !t.need[i]) {
			s.skip()
			continue
		}
		if all {
			s.hold(cellCost) // the row may be as long as the input
		}
		if i >= len(t.cells) {
			t.cells = append(t.cells, make([]cell, i+1-len(t.cells))...)
			t.vals = append(t.vals, make([]any, len(t.cells)-len(t.vals))...)
		}
		c := &t.cells[i]
		switch ch := s.peek(); {
		case ch == 'n':
			s.literal()
			*c = cell{}
		case ch == '-' || '0' <= ch && ch <= '9':
			c.kind = 'n'
			if s.end-s.pos >= 32 {
				var ok bool
				if c.n, ok = s.fastNumber(); ok {
					break
				}
			}
			c.n = s.number()
		case ch == 't' || ch == 'f':
			*c = cell{kind: 'b', n: num{mant: uint64(b2i(s.literal() == 't'))}}
		default:
			t.vals[i] = s.value()
			*c = cell{kind: 'v'}
		}
		t.n = i + 1
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// index reads a cell as a table index; null is -1.
func (s *scanner) index(c *cell, what string) int32 {
	switch c.kind {
	case 0:
		return -1
	case 'n':
		if v, ok := c.n.uint(); ok && v < 1<<31-1 {
			return int32(v)
		}
	}
	s.fail("invalid %s", what)
	return 0
}

// readCounter reads one of a process's counters, and the index of the
// exec image it was moved from (gprofImage), or -1.
func readCounter(s *scanner) (profile.Counter, int) {
	var c profile.Counter
	image := -1
	if !s.beginObject("counter") {
		return c, image
	}
	for i := 0; s.field(i); i++ {
		switch string(s.key) {
		case "name":
			c.Name = s.stringOrNull()
		case "category":
			c.Category = s.stringOrNull()
		case "description":
			c.Description = s.stringOrNull()
		case "samples":
			s.table("counter samples", []string{"time", "count"}, func(tb *table) {
				var t, n int64
				if x := tb.col(0); x.kind == 'n' {
					t = x.n.fixed(6)
				}
				if x := tb.col(1); x.kind == 'n' {
					n = x.n.int()
				}
				c.Time = append(c.Time, t)
				c.Count = append(c.Count, n)
			})
		case "gprofImage":
			if v, ok := s.number().uint(); ok && v < 1<<16 {
				image = int(v)
			}
		default:
			s.skip()
		}
	}
	return c, image
}

// readOverhead reads the profilerOverhead: times in µs, durations in ns;
// the statistics are recomputed from them.
func readOverhead(s *scanner) *profile.Overhead {
	if s.null() || !s.beginObject("profilerOverhead") {
		return nil
	}
	o := &profile.Overhead{}
	for i := 0; s.field(i); i++ {
		if string(s.key) != "samples" {
			s.skip()
			continue
		}
		s.table("profilerOverhead samples", []string{"time", "counters", "threads", "locking", "expiredMarkerCleaning"}, func(tb *table) {
			var v [5]int64
			for k := range v {
				if x := tb.col(k); x.kind == 'n' {
					if k == 0 {
						v[k] = x.n.fixed(3)
					} else {
						v[k] = x.n.int()
					}
				}
			}
			o.Time = append(o.Time, v[0])
			o.Counters = append(o.Counters, v[1])
			o.Threads = append(o.Threads, v[2]+v[3]+v[4])
		})
	}
	if len(o.Time) == 0 {
		return nil
	}
	return o
}

func (t *rawThread) readSamples(s *scanner) {
	const (
		stack = iota
		tm
		cpu
		weight
	)
	s.table("samples", []string{"stack", "time", "threadCPUDelta", "weight"}, func(tb *table) {
		s.hold(sampleCost)
		t.sampleStack.add(s.index(tb.col(stack), "sample stack"))
		var ns int64
		if c := tb.col(tm); c.kind == 'n' {
			ns = c.n.fixed(6)
		}
		t.sampleTime.add(ns)
		cd := int64(-1)
		if c := tb.col(cpu); c.kind == 'n' {
			cd = max(c.n.fixed(3), 0)
		}
		t.sampleCPU.add(cd)
		if tb.idx[weight] >= 0 {
			w := int32(1)
			if c := tb.col(weight); c.kind == 'n' {
				w = int32(c.n.int())
			}
			t.sampleWeight.add(w)
		}
	})
}

func (t *rawThread) readFrames(s *scanner) {
	s.table("frameTable", []string{"location", "category", "line"}, func(tb *table) {
		s.hold(frameCost)
		loc := s.index(tb.col(0), "frame location")
		if loc < 0 {
			s.fail("frame without a location")
		}
		t.frameLoc = append(t.frameLoc, loc)
		cat := int32(0)
		if c := tb.col(1); c.kind == 'n' {
			if v, ok := c.n.uint(); ok && v < 256 {
				cat = int32(v)
			}
		}
		t.frameCat = append(t.frameCat, cat)
		line := int32(0)
		if c := tb.col(2); c.kind == 'n' {
			if v, ok := c.n.uint(); ok && v < 1<<31 {
				line = int32(v)
			}
		}
		t.frameLine = append(t.frameLine, line)
	})
}

func (t *rawThread) readStacks(s *scanner) {
	s.table("stackTable", []string{"prefix", "frame"}, func(tb *table) {
		s.hold(stackCost)
		t.stackPrefix = append(t.stackPrefix, s.index(tb.col(0), "stack prefix"))
		f := s.index(tb.col(1), "stack frame")
		if f < 0 {
			s.fail("stack without a frame")
		}
		t.stackFrame = append(t.stackFrame, f)
	})
}

func (t *rawThread) readMarkers(s *scanner) {
	const (
		name = iota
		start
		end
		phase
		category
		data
		oldTime // before version 20 markers had one time and no phase
	)
	s.table("markers", []string{"name", "startTime", "endTime", "phase", "category", "data", "time"}, func(tb *table) {
		s.hold(markerCost)
		m := rawMarker{name: s.index(tb.col(name), "marker name"), start: nullTime, end: nullTime}
		if m.name < 0 {
			s.fail("marker without a name")
		}
		if c := tb.col(start); c.kind == 'n' {
			m.start = c.n.fixed(6)
		} else if c := tb.col(oldTime); c.kind == 'n' {
			m.start = c.n.fixed(6)
		}
		if c := tb.col(end); c.kind == 'n' {
			m.end = c.n.fixed(6)
		}
		if c := tb.col(phase); c.kind == 'n' {
			if v, ok := c.n.uint(); ok && v <= uint64(profile.PhaseIntervalEnd) {
				m.phase = profile.MarkerPhase(v)
			}
		} else if m.end != nullTime {
			m.phase = profile.PhaseInterval
		}
		if c := tb.col(category); c.kind == 'n' {
			if v, ok := c.n.uint(); ok && v < 256 {
				m.cat = int32(v)
			}
		}
		m.data = tb.val(data)
		t.markers = append(t.markers, m)
	})
}

// build turns the parsed top-level profile into the model, charging what
// it copies to meter.
func (top *rawProfile) build(meter *limit.Meter) (*profile.Profile, error) {
	if !top.hasMeta {
		return nil, fmt.Errorf("%w: missing meta", errNotGecko)
	}
	if !top.hasThreads {
		return nil, fmt.Errorf("%w: missing threads", errNotGecko)
	}
	p := &profile.Profile{Symbols: top.symbols}
	m := &p.Meta
	m.Product = top.product
	m.StartTime = time.Unix(0, top.start)
	m.Interval = time.Duration(top.interval)
	m.OSCPU = top.oscpu
	m.Platform = top.platform
	m.Arch = strings.TrimSuffix(top.abi, "-gcc3")
	m.LogicalCPUs = top.logicalCPUs
	m.CPUName = top.cpuName
	m.LostEvents = top.lostEvents
	m.DataStart = top.profilingStart
	m.Extra = top.extra
	if !slices.Equal(top.categories, profile.DefaultCategories) {
		m.Categories = top.categories
	}
	b := builder{p: p, ncat: len(top.categories), cpuUnit: top.cpuUnit, start: top.start, meter: meter}
	b.python = len(top.categories) > int(profile.CategoryPython) && top.categories[profile.CategoryPython].Name == "Python"
	if err := b.add(top, 0); err != nil {
		return nil, err
	}
	b.placeMoved()
	if top.profilingEnd >= 0 {
		m.Duration = top.profilingEnd
	} else {
		m.Duration = b.last
	}
	return p, nil
}

type builder struct {
	// moved are counters Write put with the image holding their OS
	// process's track; build gives them back to their own image.
	moved []movedCounter
	p     *profile.Profile
	ncat  int
	// python: the categories have gprof's Python one, whose frames'
	// locations are LangLocation's.
	python  bool
	cpuUnit string
	start   int64 // the top-level meta.startTime, which all times become relative to
	last    int64 // latest time seen, for profiles that do not say when they ended
	meter   *limit.Meter
}

// movedCounter is a counter read with the image holding its OS process's
// track, and the index of the image it belongs to.
type movedCounter struct {
	holder *profile.Process
	image  int
	c      profile.Counter
}

// placeMoved gives moved counters back to their images, or leaves them
// with the holder when the image is not there.
func (b *builder) placeMoved() {
	if len(b.moved) == 0 {
		return
	}
	group := map[*profile.Process][]*profile.Process{}
	for _, g := range b.p.OSProcesses() {
		for _, pr := range g {
			group[pr] = g
		}
	}
	for _, m := range b.moved {
		to := m.holder
		if g := group[m.holder]; m.image < len(g) {
			to = g[m.image]
		}
		to.Counters = append(to.Counters, m.c)
	}
}

func (b *builder) add(rp *rawProfile, shift int64) error {
	if rp.version > Version {
		return fmt.Errorf("unsupported Gecko profile version %d (newest supported is %d)", rp.version, Version)
	}
	// The model wants libs sorted and disjoint, and files from elsewhere
	// need not have them so; gprof's own already are.
	libs := profile.SortLibs(slices.Clone(rp.libs))
	var procs []*profile.Process
	byPid := map[int64]*profile.Process{}
	for _, rt := range rp.threads {
		proc := byPid[rt.pid]
		if proc == nil {
			// Every process gets its own copy of the libs.
			if err := b.meter.Hold(int64(len(libs)+8) * int64(unsafe.Sizeof(profile.Lib{}))); err != nil {
				return err
			}
			proc = &profile.Process{
				Pid:      int(rt.pid),
				Start:    shift,
				End:      -1,
				ExitCode: -1,
				Libs:     slices.Clone(libs),
			}
			if rp.shutdown >= 0 {
				proc.End = rp.shutdown + shift
			}
			byPid[rt.pid] = proc
			procs = append(procs, proc)
		}
		if proc.Name == "" {
			proc.Name = rt.processName
		}
		th, err := b.thread(rt, shift)
		if err != nil {
			return fmt.Errorf("thread %d (%s): %w", rt.tid, short(rt.name), err)
		}
		proc.Threads = append(proc.Threads, th)
	}
	if rp.proc != nil {
		if len(procs) == 0 {
			procs = append(procs, &profile.Process{Libs: slices.Clone(libs)})
		}
		if len(procs) == 1 {
			proc := procs[0]
			proc.Pid = rp.proc.pid
			proc.Name = rp.proc.name
			proc.Start = rp.proc.start
			proc.End = rp.proc.end
			proc.ExitCode = rp.proc.exitCode
			proc.Exec = rp.proc.exec
		}
	}
	if len(procs) > 0 {
		for i, c := range rp.counters {
			for i := range c.Time {
				c.Time[i] += shift
			}
			if i < len(rp.counterImages) && rp.counterImages[i] >= 0 {
				b.moved = append(b.moved, movedCounter{procs[0], rp.counterImages[i], c})
				continue
			}
			procs[0].Counters = append(procs[0].Counters, c)
		}
	}
	if rp.overhead != nil && b.p.Overhead == nil {
		for i := range rp.overhead.Time {
			rp.overhead.Time[i] += shift
		}
		b.p.Overhead = rp.overhead
	}
	b.p.Processes = append(b.p.Processes, procs...)
	for _, sub := range rp.subs {
		var subShift int64
		if sub.hasStart {
			subShift = sub.start - b.start
		}
		if err := b.add(sub, subShift); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) thread(rt *rawThread, shift int64) (*profile.Thread, error) {
	th := &profile.Thread{
		Tid:   int(rt.tid),
		Name:  rt.name,
		Main:  rt.name == "GeckoMain",
		Start: rt.register + shift,
		End:   -1,
	}
	if rt.gprofName != nil {
		th.Name = *rt.gprofName
	}
	if rt.gprofMain != nil {
		th.Main = *rt.gprofMain
	}
	if rt.unregister >= 0 {
		th.End = rt.unregister + shift
		b.last = max(b.last, th.End)
	}
	strs := rt.strings

	if len(rt.frameLoc) != len(rt.frameCat) {
		return nil, errors.New("frame table columns differ in length")
	}
	frames := make([]int32, len(rt.frameLoc))
	identity := true
	for i, loc := range rt.frameLoc {
		if int(loc) >= len(strs) {
			return nil, fmt.Errorf("frame %d has location string %d of %d", i, loc, len(strs))
		}
		f := profile.Frame{Category: profile.Category(rt.frameCat[i])}
		if int(f.Category) >= b.ncat {
			f.Category = profile.CategoryOther
		}
		s := strs[loc]
		if a, ok := parseAddress(s); ok {
			f.Address = a
		} else if name, file, line, ok := parseLangLocation(s); ok && f.Category == profile.CategoryPython && b.python {
			f.Label, f.File, f.FuncLine = name, file, line
			if i < len(rt.frameLine) {
				f.Line = rt.frameLine[i]
			}
		} else {
			f.Label = s
		}
		frames[i] = th.Frames.Intern(f)
		identity = identity && frames[i] == int32(i)
	}

	for i, fr := range rt.stackFrame {
		if pre := rt.stackPrefix[i]; pre >= int32(i) {
			return nil, fmt.Errorf("stack %d has prefix %d, not an earlier stack", i, pre)
		}
		if int(fr) >= len(frames) {
			return nil, fmt.Errorf("stack %d has frame %d of %d", i, fr, len(frames))
		}
	}
	var stacks []int32 // old index to new; nil when they are the same
	if identity {
		// No frame merged with another, as in gprof's own files, so the
		// stacks are already a valid table; interning would only cost time.
		th.Stacks.Prefix = rt.stackPrefix // null was read as -1, NoStack
		th.Stacks.Frame = rt.stackFrame
	} else {
		stacks = make([]int32, len(rt.stackFrame))
		for i, fr := range rt.stackFrame {
			pre := rt.stackPrefix[i]
			if pre >= 0 {
				pre = stacks[pre]
			}
			stacks[i] = th.Stacks.Intern(pre, frames[fr])
		}
	}

	st := rt.sampleStack.slice()
	nst := len(rt.stackFrame)
	for i, x := range st {
		if int(x) >= nst {
			return nil, fmt.Errorf("sample %d has stack %d of %d", i, x, nst)
		}
		if x >= 0 && stacks != nil {
			st[i] = stacks[x]
		}
	}
	times := rt.sampleTime.slice()
	if shift != 0 {
		for i := range times {
			times[i] += shift
		}
	}
	if n := len(times); n > 0 {
		b.last = max(b.last, times[n-1])
	}
	cpu := rt.sampleCPU.slice()
	// CPU deltas were read in thousandths of the unit.
	if b.cpuUnit == "ns" || b.cpuUnit == "variable CPU cycles" {
		for i, v := range cpu {
			if v >= 0 {
				cpu[i] = (v + 500) / 1000
			}
		}
	}
	weight := rt.sampleWeight.slice()
	if weight != nil && len(weight) != len(st) {
		// Only when samples tables of different schemas were concatenated.
		return nil, fmt.Errorf("%d of %d samples have a weight", len(weight), len(st))
	}
	th.Samples = profile.SampleTable{Stack: st, Time: times, CPUDelta: cpu, Weight: weight}

	for _, rm := range rt.markers {
		if int(rm.name) >= len(strs) {
			return nil, fmt.Errorf("marker has name string %d of %d", rm.name, len(strs))
		}
		data, _ := rm.data.(map[string]any)
		if typ, _ := data["type"].(string); lifecycle.IsLifecycle(typ) {
			continue
		}
		m := profile.Marker{Name: strs[rm.name], Phase: rm.phase, Category: profile.Category(rm.cat), Data: data}
		if int(m.Category) >= b.ncat {
			m.Category = profile.CategoryOther
		}
		if rm.start != nullTime {
			m.Start = rm.start + shift
		}
		if rm.end != nullTime && (m.Phase == profile.PhaseInterval || m.Phase == profile.PhaseIntervalEnd) {
			m.End = rm.end + shift
		}
		th.Markers = append(th.Markers, m)
	}
	return th, nil
}

// short cuts a name from the input to a length fit for an error message.
func short(s string) string {
	if len(s) > 100 {
		return strings.ToValidUTF8(s[:100], "") + "…"
	}
	return s
}

func parseAddress(s string) (uint64, bool) {
	if len(s) < 3 || s[0] != '0' || s[1] != 'x' {
		return 0, false
	}
	var v uint64
	for i := 2; i < len(s); i++ {
		d, ok := unhex(s[i])
		if !ok || v>>60 != 0 {
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, true
}

// column accumulates a table column of unknown length in chunks, so that
// growing it copies nothing and the only extra memory is one final copy.
type column[T any] struct {
	done [][]T
	cur  []T
	n    int
}

func (c *column[T]) add(v T) {
	if len(c.cur) == cap(c.cur) {
		if c.cur != nil {
			c.done = append(c.done, c.cur)
		}
		c.cur = make([]T, 0, min(max(2*cap(c.cur), 1024), 1<<16))
	}
	c.cur = append(c.cur, v)
	c.n++
}

// slice returns the column as one slice; nil if it is empty.
func (c *column[T]) slice() []T {
	if c.done == nil {
		return c.cur
	}
	out := make([]T, 0, c.n)
	for _, d := range c.done {
		out = append(out, d...)
	}
	out = append(out, c.cur...)
	c.done, c.cur = nil, nil
	return out
}

// parseLangLocation takes apart what LangLocation writes:
// "name (file:line)".
func parseLangLocation(s string) (name, file string, line int32, ok bool) {
	if !strings.HasSuffix(s, ")") {
		return "", "", 0, false
	}
	open := strings.Index(s, " (")
	colon := strings.LastIndexByte(s, ':')
	if open < 0 || colon < open+2 {
		return "", "", 0, false
	}
	n, err := strconv.ParseInt(s[colon+1:len(s)-1], 10, 32)
	if err != nil || n < 0 {
		return "", "", 0, false
	}
	return s[:open], s[open+2 : colon], int32(n), true
}
