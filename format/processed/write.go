// Package processed reads and writes the Firefox Profiler's "processed"
// profile format, the JSON the front-end keeps in memory and offers for
// download, so a profile opens already symbolicated with no symbol server.
//
// Write emits version 66 (see Version). Read accepts versions 41 through 70.
//
// # Return addresses
//
// Every frame of a caller (a stack that is the prefix of another stack) holds
// a return address, which points after the call instruction. The processed
// format stores such addresses "nudged" by −1 so they fall inside the call
// and symbolicate to the calling line and inline stack. Write does that; a
// frame seen both as a sampled leaf and as a caller becomes two frames.
//
// The model's SymbolTable is keyed by the raw lib-relative address of the
// frame, so whoever fills it stores, under a caller's raw return address,
// what the nudged address resolves to. Write therefore looks up the raw key
// first and, for callers only, falls back to the nudged key, which keeps
// tables built either way usable. Read stores symbols back under the raw
// (un-nudged) key.
//
// # Kernel frames
//
// Kernel frames either lie in a lib of the process's Libs (then they are
// handled like any other lib) or in no lib at all. In the latter case they
// are symbolicated from p.Symbols under the lib whose DebugName is "kernel",
// keyed by absolute address, and are written as a synthetic "kernel" lib
// whose base is just below the lowest kernel address seen, because absolute
// kernel addresses do not fit in a JavaScript number.
package processed

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-json"
	"github.com/gprof-dev/gprof/format/internal/lifecycle"
	"github.com/gprof-dev/gprof/internal/atomicfile"
	"github.com/gprof-dev/gprof/profile"
	"github.com/klauspost/compress/gzip"
)

// Version is the processed-format version Write emits. 66 is the oldest
// version with today's table layout (shared tables, sources,
// sourceLocationTable, prefixOffset); every later version up to 70 only
// relaxed column types or moved the lib column, so the current front-end
// upgrades it losslessly, while front-ends deployed before version 70 (such
// as profiler.firefox.com's production branch at 69) still open it.
const Version = 66

// geckoVersion fills meta.version, which the front-end ignores for processed
// profiles but requires to be present.
const geckoVersion = 24

// lifecycleType is the marker schema given to markers that carry no
// payload, so the UI lists them with a label instead of as schemaless
// markers. (The process and thread start, exec and exit markers gprof
// derives from lifetimes have payloads and schemas of their own; see
// package format/internal/lifecycle.)
const lifecycleType = "Lifecycle"

// WriteFile writes p to path, gzip-compressed when path ends in ".gz" (in
// any case). A regular file is written as a temporary file in the same
// directory and renamed into place, so an interrupted write never leaves a
// truncated profile behind; a device or FIFO is written in place (see
// internal/atomicfile).
func WriteFile(path string, p *profile.Profile) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		if !strings.HasSuffix(strings.ToLower(path), ".gz") {
			return Write(w, p)
		}
		zw := gzip.NewWriter(w)
		if err := Write(zw, p); err != nil {
			return err
		}
		return zw.Close()
	})
}

// Write writes p as a processed profile. Tables are built in memory (they
// grow with distinct frames and stacks); samples and markers are streamed.
func Write(w io.Writer, p *profile.Profile) error {
	b, err := build(p)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	j := newJSONWriter(bw)
	b.write(j)
	if j.err != nil {
		return j.err
	}
	return bw.Flush()
}

type outLib struct {
	lib    profile.Lib
	kernel bool
}

type frameKey struct {
	lib    int32 // output lib; -1 no lib; -2 label
	addr   uint64
	caller bool
	cat    int32
	label  string
}

// chain is a run of consecutive output frames: an address's outer function
// followed by its inlined callees.
type chain struct{ start, n int32 }

type funcKey struct {
	name, file, resource int32
}

type symKey struct {
	lib  int32
	addr uint64
	name int32
}

type threadOut struct {
	pr   *profile.Process
	th   *profile.Thread
	leaf []int32 // model stack → output stack used by samples; -1 if unused
	// markers are the lifecycle markers followed by the thread's own.
	markers []profile.Marker
}

type builder struct {
	p    *profile.Profile
	cats []profile.CategoryInfo
	// catShift is 1 when a grey default category had to be prepended.
	catShift int32

	strs     []string
	strIdx   map[string]int32
	libs     []outLib
	libIdx   map[profile.LibKey]int32
	kernKey  profile.LibKey
	kernOK   bool
	kernBase uint64
	kernLib  int32

	// frame table
	fAddr  []int64
	fDepth []uint8
	fCat   []int32
	fFunc  []int32
	fSym   []int32
	fLine  []int32
	fLib   []int32
	fIndex map[frameKey]chain

	// func table
	fnName   []int32
	fnRes    []int32
	fnSource []int32
	fnIndex  map[funcKey]int32

	srcFile  []int32
	srcIndex map[int32]int32

	symLib   []int32
	symAddr  []uint64
	symName  []int32
	symSize  []uint64
	symIndex map[symKey]int32

	sPrefix []int32
	sFrame  []int32
	sIndex  map[uint64]int32

	threads []threadOut
	schemas []markerSchema
	// ids names processes and threads as in the Gecko output (see
	// profile.TrackIDs).
	ids *profile.TrackIDs
}

func build(p *profile.Profile) (*builder, error) {
	b := &builder{
		p:        p,
		strIdx:   make(map[string]int32),
		libIdx:   make(map[profile.LibKey]int32),
		kernLib:  -1,
		fIndex:   make(map[frameKey]chain),
		fnIndex:  make(map[funcKey]int32),
		srcIndex: make(map[int32]int32),
		symIndex: make(map[symKey]int32),
		sIndex:   make(map[uint64]int32),
	}
	b.setCategories()
	b.kernKey, b.kernOK = p.Symbols.KernelLib()
	if err := b.kernelBase(); err != nil {
		return nil, err
	}
	// The front-end groups threads into process tracks by pid string;
	// the ids keep exec images together and reused pids apart, the same
	// way as the Gecko writer.
	b.ids = profile.NewTrackIDs(p)
	for _, pr := range p.Processes {
		if pr == nil {
			continue
		}
		libs, err := sortedLibs(pr)
		if err != nil {
			return nil, err
		}
		for _, th := range pr.Threads {
			if th == nil {
				continue
			}
			t, err := b.thread(pr, libs, th)
			if err != nil {
				return nil, fmt.Errorf("pid %d tid %d: %w", pr.Pid, th.Tid, err)
			}
			t.markers = append(lifecycle.Markers(b.ids, pr, th), th.Markers...)
			b.threads = append(b.threads, t)
		}
	}
	b.schemas = b.collectSchemas()
	return b, nil
}

func (b *builder) setCategories() {
	cats := b.p.Meta.Categories
	if len(cats) == 0 {
		cats = profile.DefaultCategories
	}
	if cats[0].Color != "grey" {
		// The front-end takes the first grey category as the default for
		// frames without one; it must exist, and keeping it first means
		// index 0 always works as a fallback.
		cats = append([]profile.CategoryInfo{{Name: "Other", Color: "grey"}}, cats...)
		b.catShift = 1
	}
	b.cats = cats
}

func (b *builder) category(c profile.Category) int32 {
	i := int32(c) + b.catShift
	if i >= int32(len(b.cats)) {
		return 0
	}
	return i
}

func (b *builder) str(s string) int32 {
	if i, ok := b.strIdx[s]; ok {
		return i
	}
	i := int32(len(b.strs))
	b.strs = append(b.strs, s)
	b.strIdx[s] = i
	return i
}

// kernelBase chooses the synthetic kernel lib's base: one page below the
// lowest unmapped kernel frame or symbol start, so that relative addresses,
// nudged ones included, are small and non-negative.
func (b *builder) kernelBase() error {
	if !b.kernOK {
		return nil
	}
	lo := uint64(math.MaxUint64)
	for _, pr := range b.p.Processes {
		if pr == nil {
			continue
		}
		libs, err := sortedLibs(pr)
		if err != nil {
			return err
		}
		for _, th := range pr.Threads {
			if th == nil {
				continue
			}
			for _, f := range th.Frames.Frames {
				if !b.isKernel(libs, f) {
					continue
				}
				lo = min(lo, f.Address)
				for _, a := range []uint64{f.Address, f.Address - 1} {
					for _, s := range b.p.Symbols.Lookup(b.kernKey, a) {
						if plausibleFuncAddr(s.FuncAddr, a) {
							lo = min(lo, s.FuncAddr)
						}
					}
				}
			}
		}
	}
	if lo != math.MaxUint64 && lo > 0 {
		b.kernBase = (lo - 1) &^ 0xfff
	}
	return nil
}

// plausibleFuncAddr reports whether fa can be the start of the function
// containing a, which rules out unknown (0) and lib-relative start addresses.
func plausibleFuncAddr(fa, a uint64) bool {
	return fa != 0 && fa <= a && a-fa < 1<<32
}

func (b *builder) isKernel(libs []profile.Lib, f profile.Frame) bool {
	return b.kernOK && f.Label == "" && f.Category == profile.CategoryKernel && profile.FindLib(libs, f.Address) == nil
}

// sortedLibs returns a copy of pr's libs ordered by start, checking the
// model's promise that they do not overlap.
func sortedLibs(pr *profile.Process) ([]profile.Lib, error) {
	libs := slices.Clone(pr.Libs)
	slices.SortStableFunc(libs, func(a, b profile.Lib) int { return cmp.Compare(a.Start, b.Start) })
	for i := 1; i < len(libs); i++ {
		if libs[i].Start < libs[i-1].End {
			return nil, fmt.Errorf("pid %d: libs %q and %q overlap", pr.Pid, libs[i-1].Name, libs[i].Name)
		}
	}
	return libs, nil
}

// outLibKey identifies a lib in the output. Libs without identity are told
// apart by path so that unrelated anonymous mappings do not merge.
func outLibKey(l *profile.Lib) profile.LibKey {
	k := l.Key()
	if k.DebugName == "" && k.BreakpadID == "" {
		k.DebugName = "\x00" + l.Path + "\x00" + l.Name
	}
	return k
}

func (b *builder) lib(l *profile.Lib) int32 {
	k := outLibKey(l)
	if i, ok := b.libIdx[k]; ok {
		return i
	}
	i := int32(len(b.libs))
	b.libs = append(b.libs, outLib{lib: *l})
	b.libIdx[k] = i
	return i
}

func (b *builder) kernelLib() int32 {
	if b.kernLib < 0 {
		b.kernLib = int32(len(b.libs))
		b.libs = append(b.libs, outLib{kernel: true, lib: profile.Lib{
			Name: "kernel", Path: "kernel", DebugName: b.kernKey.DebugName,
			BreakpadID: b.kernKey.BreakpadID, Arch: b.p.Meta.Arch,
		}})
	}
	return b.kernLib
}

func hexName(a uint64) string { return "0x" + strconv.FormatUint(a, 16) }

// frame returns the output frames for model frame f in the given role.
func (b *builder) frame(libs []profile.Lib, f profile.Frame, caller bool) chain {
	cat := b.category(f.Category)
	if f.Label != "" {
		k := frameKey{lib: -2, label: f.Label, cat: cat}
		if c, ok := b.fIndex[k]; ok {
			return c
		}
		fn := b.fn(b.str(f.Label), -1, -1)
		c := chain{b.addFrame(-1, 0, cat, fn, -1, 0, -1), 1}
		b.fIndex[k] = c
		return c
	}
	var (
		li   int32 = -1
		rel  uint64
		syms []profile.SymbolFrame
	)
	if l := profile.FindLib(libs, f.Address); l != nil {
		li = b.lib(l)
		rel = l.Rel(f.Address)
		k := frameKey{lib: li, addr: rel, caller: caller, cat: cat}
		if c, ok := b.fIndex[k]; ok {
			return c
		}
		syms = b.p.Symbols.LookupFrame(l.Key(), rel, caller)
		c := b.native(li, rel, caller, cat, f.Address, syms, 0)
		b.fIndex[k] = c
		return c
	}
	if b.isKernel(libs, f) {
		li = b.kernelLib()
		rel = f.Address - b.kernBase
		k := frameKey{lib: li, addr: rel, caller: caller, cat: cat}
		if c, ok := b.fIndex[k]; ok {
			return c
		}
		syms = b.p.Symbols.LookupFrame(b.kernKey, f.Address, caller)
		c := b.native(li, rel, caller, cat, f.Address, syms, b.kernBase)
		b.fIndex[k] = c
		return c
	}
	// An address in no known lib cannot be made lib-relative, so like the
	// front-end it keeps no address and is named by its hex value; the role
	// does not matter for such a frame.
	k := frameKey{lib: -1, addr: f.Address, cat: cat}
	if c, ok := b.fIndex[k]; ok {
		return c
	}
	fn := b.fn(b.str(hexName(f.Address)), -1, -1)
	c := chain{b.addFrame(-1, 0, cat, fn, -1, 0, -1), 1}
	b.fIndex[k] = c
	return c
}

// native adds the frames of a lib address. base converts symbol function
// starts to lib-relative ones (non-zero only for the kernel, whose symbols
// use absolute addresses).
func (b *builder) native(li int32, rel uint64, caller bool, cat int32, abs uint64, syms []profile.SymbolFrame, base uint64) chain {
	addr := int64(rel)
	if caller && addr > 0 {
		addr--
	}
	if len(syms) == 0 {
		// The name stays the raw absolute address, as the front-end names
		// frames it could not symbolicate.
		fn := b.fn(b.str(hexName(abs)), li, -1)
		return chain{b.addFrame(addr, 0, cat, fn, -1, 0, li), 1}
	}
	outer := syms[0]
	symAddr := uint64(addr)
	if base != 0 {
		if plausibleFuncAddr(outer.FuncAddr, abs) && outer.FuncAddr >= base {
			symAddr = outer.FuncAddr - base
		}
	} else if outer.FuncAddr != 0 || outer.FuncSize != 0 {
		symAddr = outer.FuncAddr
	}
	name := b.str(outer.Function)
	sk := symKey{lib: li, addr: symAddr, name: name}
	if outer.FuncAddr == 0 && outer.FuncSize == 0 {
		// Without a known start, group by name so one function still gets
		// one native symbol.
		sk.addr = math.MaxUint64
	}
	sym, ok := b.symIndex[sk]
	if !ok {
		sym = int32(len(b.symLib))
		b.symLib = append(b.symLib, li)
		b.symAddr = append(b.symAddr, symAddr)
		b.symName = append(b.symName, name)
		b.symSize = append(b.symSize, outer.FuncSize)
		b.symIndex[sk] = sym
	}
	c := chain{start: int32(len(b.fAddr))}
	for d, s := range syms {
		fn := b.fn(b.str(s.Function), li, b.source(s.File))
		b.addFrame(addr, uint8(min(d, 255)), cat, fn, sym, int32(s.Line), li)
		c.n++
	}
	return c
}

func (b *builder) source(file string) int32 {
	if file == "" {
		return -1
	}
	s := b.str(file)
	if i, ok := b.srcIndex[s]; ok {
		return i
	}
	i := int32(len(b.srcFile))
	b.srcFile = append(b.srcFile, s)
	b.srcIndex[s] = i
	return i
}

// fn interns a function. One resource exists per lib, with the same index,
// so a lib index doubles as its resource index.
func (b *builder) fn(name, resource, source int32) int32 {
	k := funcKey{name: name, file: source, resource: resource}
	if i, ok := b.fnIndex[k]; ok {
		return i
	}
	i := int32(len(b.fnName))
	b.fnName = append(b.fnName, name)
	b.fnRes = append(b.fnRes, resource)
	b.fnSource = append(b.fnSource, source)
	b.fnIndex[k] = i
	return i
}

func (b *builder) addFrame(addr int64, depth uint8, cat, fn, sym, line, lib int32) int32 {
	i := int32(len(b.fAddr))
	b.fAddr = append(b.fAddr, addr)
	b.fDepth = append(b.fDepth, depth)
	b.fCat = append(b.fCat, cat)
	b.fFunc = append(b.fFunc, fn)
	b.fSym = append(b.fSym, sym)
	b.fLine = append(b.fLine, line)
	b.fLib = append(b.fLib, lib)
	return i
}

func (b *builder) stack(prefix, frame int32) int32 {
	k := uint64(uint32(prefix+1))<<32 | uint64(uint32(frame))
	if i, ok := b.sIndex[k]; ok {
		return i
	}
	i := int32(len(b.sFrame))
	b.sPrefix = append(b.sPrefix, prefix)
	b.sFrame = append(b.sFrame, frame)
	b.sIndex[k] = i
	return i
}

// thread maps th's stacks into the shared output tables. Each model stack
// can need two output versions: as a sampled leaf (raw address) and as a
// caller of deeper stacks (nudged address).
func (b *builder) thread(pr *profile.Process, libs []profile.Lib, th *profile.Thread) (threadOut, error) {
	st, ft, sm := &th.Stacks, &th.Frames, &th.Samples
	ns, nf := len(st.Frame), len(ft.Frames)
	if len(st.Prefix) != ns {
		return threadOut{}, fmt.Errorf("stack table columns differ in length")
	}
	n := len(sm.Stack)
	if len(sm.Time) != n || (sm.CPUDelta != nil && len(sm.CPUDelta) != n) || (sm.Weight != nil && len(sm.Weight) != n) {
		return threadOut{}, fmt.Errorf("sample table columns differ in length")
	}
	const (
		usedLeaf = 1 << iota
		usedCaller
	)
	use := make([]uint8, ns)
	for i := 0; i < ns; i++ {
		p, f := st.Prefix[i], st.Frame[i]
		if f < 0 || int(f) >= nf {
			return threadOut{}, fmt.Errorf("stack %d: frame %d out of range", i, f)
		}
		if p != profile.NoStack {
			if p < 0 || p >= int32(i) {
				return threadOut{}, fmt.Errorf("stack %d: prefix %d is not an earlier stack", i, p)
			}
			use[p] |= usedCaller
		}
	}
	for i, s := range sm.Stack {
		if s == profile.NoStack {
			continue
		}
		if s < 0 || int(s) >= ns {
			return threadOut{}, fmt.Errorf("sample %d: stack %d out of range", i, s)
		}
		use[s] |= usedLeaf
	}
	leaf := make([]int32, ns)
	caller := make([]int32, ns)
	// Frame chains are cached per model frame and role: [2*f] leaf,
	// [2*f+1] caller.
	chains := make([]chain, 2*nf)
	for i := range chains {
		chains[i].n = -1
	}
	get := func(f int32, asCaller bool) chain {
		k := 2 * int(f)
		if asCaller {
			k++
		}
		if chains[k].n < 0 {
			chains[k] = b.frame(libs, ft.Frames[f], asCaller)
		}
		return chains[k]
	}
	for i := 0; i < ns; i++ {
		leaf[i], caller[i] = -1, -1
		if use[i] == 0 {
			continue
		}
		parent := int32(-1)
		if p := st.Prefix[i]; p != profile.NoStack {
			parent = caller[p]
		}
		for _, role := range []uint8{usedLeaf, usedCaller} {
			if use[i]&role == 0 {
				continue
			}
			c := get(st.Frame[i], role == usedCaller)
			s := parent
			for k := c.start; k < c.start+c.n; k++ {
				s = b.stack(s, k)
			}
			if role == usedLeaf {
				leaf[i] = s
			} else {
				caller[i] = s
			}
		}
	}
	return threadOut{pr: pr, th: th, leaf: leaf}, nil
}

// markerSchema describes one marker payload type in meta.markerSchema.
type markerSchema struct {
	name   string
	fields []schemaField
}

type schemaField struct{ key, format string }

func (b *builder) collectSchemas() []markerSchema {
	bare := false // markers without a payload
	types := map[string]map[string]string{}
	for _, t := range b.threads {
		for _, m := range t.th.Markers {
			if typ, _ := m.Data["type"].(string); lifecycle.IsLifecycle(typ) || typ == profile.OffCPUMarkerType {
				continue // described by lifecycle.Schema
			}
			if m.Data == nil {
				bare = true
				continue
			}
			typ, _ := m.Data["type"].(string)
			if typ == "" {
				continue
			}
			fields := types[typ]
			if fields == nil {
				fields = map[string]string{}
				types[typ] = fields
			}
			for k, v := range m.Data {
				if k == "type" {
					continue
				}
				if _, ok := fields[k]; !ok {
					fields[k] = fieldFormat(v)
				}
			}
		}
	}
	var out []markerSchema
	if bare {
		out = append(out, markerSchema{name: lifecycleType})
	}
	names := make([]string, 0, len(types))
	for n := range types {
		if n != lifecycleType || !bare {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		s := markerSchema{name: n}
		keys := make([]string, 0, len(types[n]))
		for k := range types[n] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			s.fields = append(s.fields, schemaField{k, types[n][k]})
		}
		out = append(out, s)
	}
	return out
}

func fieldFormat(v any) string {
	switch v.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "integer"
	case float32, float64:
		return "decimal"
	}
	return "string"
}

// ms writes a nanosecond quantity as milliseconds, exactly.
func (j *jsonWriter) ms(ns int64) { j.scaled(ns, 6) }

func (b *builder) write(j *jsonWriter) {
	j.beginObject()
	b.writeMeta(j)
	b.writeLibs(j)
	j.key("pages")
	j.value("[]")
	j.key("counters")
	b.writeCounters(j)
	j.key("profilerOverhead")
	b.writeOverhead(j)
	j.key("threads")
	j.beginArray()
	for _, t := range b.threads {
		b.writeThread(j, t)
	}
	j.endArray()
	b.writeShared(j)
	j.endObject()
	j.byte1('\n')
}

func (b *builder) writeMeta(j *jsonWriter) {
	m := &b.p.Meta
	j.key("meta")
	j.beginObject()
	j.key("version")
	j.int(geckoVersion)
	j.key("preprocessedProfileVersion")
	j.int(Version)
	j.key("product")
	if m.Product != "" {
		j.str(m.Product)
	} else {
		j.str("gprof")
	}
	j.key("interval")
	j.ms(int64(m.Interval))
	j.key("startTime")
	if m.StartTime.IsZero() {
		j.int(0)
	} else {
		j.scaled(m.StartTime.UnixNano(), 6)
	}
	if m.Duration > 0 {
		if !m.StartTime.IsZero() {
			j.key("endTime")
			j.scaled(m.StartTime.UnixNano()+m.Duration, 6)
		}
		// The front-end's timeline starts here: where a bounded
		// recording's kept data starts, as in the Gecko output.
		j.key("profilingStartTime")
		j.ms(m.DataStart)
		j.key("profilingEndTime")
		j.ms(m.Duration)
	}
	j.key("processType")
	j.int(0)
	j.key("stackwalk")
	j.int(1)
	j.key("debug")
	j.boolean(false)
	j.key("symbolicated")
	j.boolean(true)
	j.key("usesOnlyOneStackType")
	j.boolean(true)
	j.key("sourceCodeIsNotOnSearchfox")
	j.boolean(true)
	for _, kv := range [][2]string{{"oscpu", m.OSCPU}, {"platform", m.Platform}, {"CPUName", m.CPUName}, {"abi", m.Arch}} {
		if kv[1] != "" {
			j.key(kv[0])
			j.str(kv[1])
		}
	}
	if m.LogicalCPUs > 0 {
		j.key("logicalCPUs")
		j.int(int64(m.LogicalCPUs))
	}
	j.key("sampleUnits")
	j.value(`{"time":"ms","eventDelay":"ms","threadCPUDelta":"µs"}`)
	j.key("extensions")
	j.value(`{"baseURL":[],"id":[],"name":[],"length":0}`)
	j.key("categories")
	j.beginArray()
	for _, c := range b.cats {
		j.beginObject()
		j.key("name")
		j.str(c.Name)
		j.key("color")
		j.str(c.Color)
		j.key("subcategories")
		j.value(`["Other"]`)
		j.endObject()
	}
	j.endArray()
	j.key("markerSchema")
	j.beginArray()
	for _, s := range b.schemas {
		j.beginObject()
		j.key("name")
		j.str(s.name)
		if s.name == lifecycleType && len(s.fields) == 0 {
			j.key("tooltipLabel")
			j.str("{marker.name}")
			j.key("tableLabel")
			j.str("{marker.name}")
			j.key("chartLabel")
			j.str("{marker.name}")
			j.key("description")
			j.str("Process and thread lifecycle events observed by gprof.")
			j.key("display")
			j.value(`["marker-chart","marker-table","timeline-overview"]`)
		} else {
			j.key("display")
			j.value(`["marker-chart","marker-table"]`)
		}
		j.key("fields")
		j.beginArray()
		for _, f := range s.fields {
			j.beginObject()
			j.key("key")
			j.str(f.key)
			j.key("label")
			j.str(f.key)
			j.key("format")
			j.str(f.format)
			j.endObject()
		}
		j.endArray()
		j.endObject()
	}
	for _, s := range lifecycle.Schema("fields") {
		j.value(s)
	}
	j.endArray()
	if len(m.Extra) > 0 || m.LostEvents > 0 {
		j.key("extra")
		j.beginArray()
		j.beginObject()
		j.key("label")
		j.str(extraLabel)
		j.key("entries")
		j.beginArray()
		keys := make([]string, 0, len(m.Extra))
		for k := range m.Extra {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			j.beginObject()
			j.key("label")
			j.str(k)
			j.key("format")
			j.str("string")
			j.key("value")
			j.str(m.Extra[k])
			j.endObject()
		}
		if m.LostEvents > 0 {
			j.beginObject()
			j.key("label")
			j.str(lostEventsLabel)
			j.key("format")
			j.str("integer")
			j.key("value")
			j.uint(m.LostEvents)
			j.endObject()
		}
		j.endArray()
		j.endObject()
		j.endArray()
	}
	j.endObject()
}

const (
	extraLabel      = "gprof"
	lostEventsLabel = "Lost events"
)

func (b *builder) writeLibs(j *jsonWriter) {
	j.key("libs")
	j.beginArray()
	for _, ol := range b.libs {
		l := &ol.lib
		arch := l.Arch
		if arch == "" {
			arch = b.p.Meta.Arch
		}
		j.beginObject()
		j.key("arch")
		j.str(arch)
		j.key("name")
		j.str(l.Name)
		j.key("path")
		j.str(l.Path)
		j.key("debugName")
		j.str(l.DebugName)
		j.key("debugPath")
		if l.DebugPath != "" {
			j.str(l.DebugPath)
		} else {
			j.str(l.Path)
		}
		j.key("breakpadId")
		j.str(l.BreakpadID)
		j.key("codeId")
		if l.CodeID != "" {
			j.str(l.CodeID)
		} else {
			j.null()
		}
		j.endObject()
	}
	j.endArray()
}

// counterDisplay is how the front-end draws a counter of each category
// gprof records, as its own Gecko import derives it.
var counterDisplay = map[string]string{
	"Memory": `{"graphType":"line-accumulated","unit":"bytes","color":"orange","markerSchemaLocation":"timeline-memory","sortWeight":20,"label":"Memory","tooltipRows":[` +
		`{"type":"value","source":"accumulated","format":{"unit":"bytes"},"label":"relative memory at this time","labelKey":"memory-relative"},` +
		`{"type":"value","source":"count-range","format":{"unit":"bytes"},"label":"memory range in graph","labelKey":"memory-range"},` +
		`{"type":"value","source":"sample-number","format":{"unit":"number"},"label":"allocations and deallocations since the previous sample","labelKey":"memory-operations"}]}`,
	"CPU": `{"graphType":"line-rate","unit":"percent","color":"grey","markerSchemaLocation":null,"sortWeight":40,"label":"Process CPU","tooltipRows":[` +
		`{"type":"value","source":"cpu-ratio","format":{"unit":"percent"},"label":"CPU","labelKey":"cpu"}]}`,
}

// mainThreadIndex is the index in b.threads of the thread that holds
// pr's process track, or -1.
func (b *builder) mainThreadIndex(pr *profile.Process) int {
	o := b.ids.Process(pr)
	for i, t := range b.threads {
		if t.th == o.Main {
			return i
		}
	}
	return -1
}

func (b *builder) writeCounters(j *jsonWriter) {
	j.beginArray()
	for _, pr := range b.p.Processes {
		if pr == nil || len(pr.Counters) == 0 {
			continue
		}
		main := b.mainThreadIndex(pr)
		if main < 0 {
			continue
		}
		for i := range pr.Counters {
			c := &pr.Counters[i]
			display, ok := counterDisplay[c.Category]
			if !ok || len(c.Time) == 0 {
				continue
			}
			j.beginObject()
			j.key("name")
			j.str(c.Name)
			j.key("category")
			j.str(c.Category)
			j.key("description")
			j.str(c.Description)
			j.key("pid")
			j.str(b.ids.Process(pr).Pid)
			j.key("mainThreadIndex")
			j.int(int64(main))
			j.key("display")
			j.value(display)
			j.key("samples")
			j.beginObject()
			j.key("time")
			j.beginArray()
			for _, t := range c.Time {
				j.ms(t)
			}
			j.endArray()
			j.key("count")
			j.beginArray()
			for _, v := range c.Count {
				j.int(v)
			}
			j.endArray()
			j.key("length")
			j.int(int64(len(c.Time)))
			j.endObject()
			j.endObject()
		}
	}
	j.endArray()
}

// writeOverhead writes gprof's own cost, attached to the first process:
// times in ms, durations in ns, statistics in µs.
func (b *builder) writeOverhead(j *jsonWriter) {
	j.beginArray()
	o := b.p.Overhead
	st, ok := o.Stats()
	main := -1
	if ok && len(b.p.Processes) > 0 && b.p.Processes[0] != nil {
		main = b.mainThreadIndex(b.p.Processes[0])
	}
	if main >= 0 {
		j.beginObject()
		j.key("samples")
		j.beginObject()
		j.key("time")
		j.beginArray()
		for _, t := range o.Time {
			j.ms(t)
		}
		j.endArray()
		for _, col := range []struct {
			name string
			v    []int64
		}{{"locking", nil}, {"expiredMarkerCleaning", nil}, {"counters", o.Counters}, {"threads", o.Threads}} {
			j.key(col.name)
			j.beginArray()
			for i := range o.Time {
				if col.v == nil {
					j.int(0)
				} else {
					j.int(col.v[i])
				}
			}
			j.endArray()
		}
		j.key("length")
		j.int(int64(len(o.Time)))
		j.endObject()
		j.key("pid")
		j.str(b.ids.Process(b.p.Processes[0]).Pid)
		j.key("mainThreadIndex")
		j.int(int64(main))
		j.key("statistics")
		data, err := json.Marshal(st.JSON())
		if err != nil {
			panic(err) // numbers and strings only
		}
		j.valueBytes(data)
		j.endObject()
	}
	j.endArray()
}

func (b *builder) writeThread(j *jsonWriter, t threadOut) {
	pr, th := t.pr, t.th
	o := b.ids.Process(pr)
	j.beginObject()
	j.key("name")
	// As in the Gecko output, so that both show the same track labels.
	j.str(b.ids.ThreadName(pr, th))
	// The front-end ignores keys it does not know; Read takes the
	// thread's own name from here, which GeckoMain hides.
	j.key("gprofName")
	j.str(th.Name)
	j.key("processName")
	j.str(o.Name)
	j.key("processType")
	j.str("default")
	j.key("pid")
	j.str(o.Pid)
	j.key("tid")
	if tid := b.ids.Tid(th); profile.IsNumber(tid) {
		j.value(tid)
	} else {
		j.str(tid)
	}
	j.key("isMainThread")
	j.boolean(th == o.Main)
	j.key("processStartupTime")
	j.ms(pr.Start)
	j.key("processShutdownTime")
	if pr.End < 0 {
		j.null()
	} else {
		j.ms(pr.End)
	}
	j.key("registerTime")
	j.ms(th.Start)
	j.key("unregisterTime")
	if th.End < 0 {
		j.null()
	} else {
		j.ms(th.End)
	}
	j.key("pausedRanges")
	j.value("[]")

	sm := &th.Samples
	n := len(sm.Stack)
	j.key("samples")
	j.beginObject()
	j.key("length")
	j.int(int64(n))
	j.key("weightType")
	j.str("samples")
	j.key("stack")
	j.beginArray()
	for _, s := range sm.Stack {
		if s == profile.NoStack {
			j.null()
		} else {
			j.int(int64(t.leaf[s]))
		}
	}
	j.endArray()
	j.key("timeDeltas")
	j.beginArray()
	var prev int64
	for _, tm := range sm.Time {
		j.ms(tm - prev)
		prev = tm
	}
	j.endArray()
	j.key("weight")
	if sm.Weight == nil {
		j.null()
	} else {
		j.beginArray()
		for _, w := range sm.Weight {
			j.int(int64(w))
		}
		j.endArray()
	}
	if sm.CPUDelta != nil {
		j.key("threadCPUDelta")
		j.beginArray()
		for _, d := range sm.CPUDelta {
			if d < 0 {
				j.null()
			} else {
				j.scaled(d, 3)
			}
		}
		j.endArray()
	}
	j.endObject()

	b.writeMarkers(j, t.markers)
	j.endObject()
}

func (b *builder) writeMarkers(j *jsonWriter, ms []profile.Marker) {
	j.key("markers")
	j.beginObject()
	j.key("length")
	j.int(int64(len(ms)))
	j.key("name")
	j.beginArray()
	for _, m := range ms {
		j.int(int64(b.str(m.Name)))
	}
	j.endArray()
	j.key("startTime")
	j.beginArray()
	for _, m := range ms {
		if m.Phase == profile.PhaseIntervalEnd {
			j.null()
		} else {
			j.ms(m.Start)
		}
	}
	j.endArray()
	j.key("endTime")
	j.beginArray()
	for _, m := range ms {
		if m.Phase == profile.PhaseInstant || m.Phase == profile.PhaseIntervalStart {
			j.null()
		} else {
			j.ms(m.End)
		}
	}
	j.endArray()
	j.key("phase")
	j.beginArray()
	for _, m := range ms {
		j.int(int64(min(m.Phase, profile.PhaseIntervalEnd)))
	}
	j.endArray()
	j.key("category")
	j.beginArray()
	for _, m := range ms {
		j.int(int64(b.category(m.Category)))
	}
	j.endArray()
	j.key("data")
	j.beginArray()
	for _, m := range ms {
		if m.Data == nil {
			j.value(`{"type":"` + lifecycleType + `"}`)
			continue
		}
		data, err := json.Marshal(m.Data)
		if err != nil {
			// A payload that cannot be encoded loses its data, not the
			// marker.
			j.null()
			continue
		}
		j.valueBytes(data)
	}
	j.endArray()
	j.endObject()
}

func (b *builder) writeShared(j *jsonWriter) {
	j.key("shared")
	j.beginObject()

	// Strings used by the markers were interned while the threads were
	// written, so the string array comes last.
	n := len(b.sFrame)
	j.key("stackTable")
	j.beginObject()
	j.key("length")
	j.int(int64(n))
	j.key("frame")
	writeInts(j, b.sFrame)
	j.key("prefixOffset")
	j.beginArray()
	for i, p := range b.sPrefix {
		if p < 0 {
			j.int(0)
		} else {
			j.int(int64(int32(i) - p))
		}
	}
	j.endArray()
	j.endObject()

	n = len(b.fAddr)
	j.key("frameTable")
	j.beginObject()
	j.key("length")
	j.int(int64(n))
	j.key("address")
	j.beginArray()
	for _, a := range b.fAddr {
		j.int(a)
	}
	j.endArray()
	j.key("inlineDepth")
	j.beginArray()
	for _, d := range b.fDepth {
		j.int(int64(d))
	}
	j.endArray()
	j.key("category")
	writeInts(j, b.fCat)
	j.key("subcategory")
	writeZeros(j, n)
	j.key("func")
	writeInts(j, b.fFunc)
	j.key("nativeSymbol")
	writeOptInts(j, b.fSym)
	j.key("innerWindowID")
	writeZeros(j, n)
	j.key("line")
	j.beginArray()
	for _, l := range b.fLine {
		if l <= 0 {
			j.null()
		} else {
			j.int(int64(l))
		}
	}
	j.endArray()
	j.key("column")
	writeNulls(j, n)
	j.key("originalLocation")
	writeNulls(j, n)
	j.endObject()

	n = len(b.fnName)
	j.key("funcTable")
	j.beginObject()
	j.key("length")
	j.int(int64(n))
	j.key("name")
	writeInts(j, b.fnName)
	j.key("isJS")
	writeFalses(j, n)
	j.key("relevantForJS")
	writeFalses(j, n)
	j.key("resource")
	writeInts(j, b.fnRes)
	j.key("source")
	writeOptInts(j, b.fnSource)
	j.key("lineNumber")
	writeNulls(j, n)
	j.key("columnNumber")
	writeNulls(j, n)
	j.key("originalLocation")
	writeNulls(j, n)
	j.endObject()

	n = len(b.libs)
	j.key("resourceTable")
	j.beginObject()
	j.key("length")
	j.int(int64(n))
	j.key("lib")
	j.beginArray()
	for i := range b.libs {
		j.int(int64(i))
	}
	j.endArray()
	j.key("name")
	j.beginArray()
	for _, l := range b.libs {
		j.int(int64(b.str(l.lib.Name)))
	}
	j.endArray()
	j.key("host")
	writeNulls(j, n)
	j.key("type")
	j.beginArray()
	for range b.libs {
		j.int(1) // ResourceType.Library
	}
	j.endArray()
	j.endObject()

	n = len(b.symLib)
	j.key("nativeSymbols")
	j.beginObject()
	j.key("length")
	j.int(int64(n))
	j.key("libIndex")
	writeInts(j, b.symLib)
	j.key("address")
	j.beginArray()
	for _, a := range b.symAddr {
		j.uint(a)
	}
	j.endArray()
	j.key("name")
	writeInts(j, b.symName)
	j.key("functionSize")
	j.beginArray()
	for _, s := range b.symSize {
		if s == 0 {
			j.null()
		} else {
			j.uint(s)
		}
	}
	j.endArray()
	j.endObject()

	n = len(b.srcFile)
	j.key("sources")
	j.beginObject()
	j.key("length")
	j.int(int64(n))
	j.key("id")
	writeNulls(j, n)
	j.key("filename")
	writeInts(j, b.srcFile)
	j.key("startLine")
	writeOnes(j, n)
	j.key("startColumn")
	writeOnes(j, n)
	j.key("sourceMapURL")
	writeNulls(j, n)
	j.key("content")
	writeNulls(j, n)
	j.endObject()

	j.key("sourceLocationTable")
	j.value(`{"length":0,"source":[],"line":[],"column":[]}`)

	j.key("stringArray")
	j.beginArray()
	for _, s := range b.strs {
		j.str(s)
	}
	j.endArray()
	j.endObject()
}

func writeInts(j *jsonWriter, v []int32) {
	j.beginArray()
	for _, x := range v {
		j.int(int64(x))
	}
	j.endArray()
}

// writeOptInts writes v with negative values as null.
func writeOptInts(j *jsonWriter, v []int32) {
	j.beginArray()
	for _, x := range v {
		if x < 0 {
			j.null()
		} else {
			j.int(int64(x))
		}
	}
	j.endArray()
}

func writeRepeat(j *jsonWriter, n int, v string) {
	j.beginArray()
	for i := 0; i < n; i++ {
		j.value(v)
	}
	j.endArray()
}

func writeNulls(j *jsonWriter, n int)  { writeRepeat(j, n, "null") }
func writeZeros(j *jsonWriter, n int)  { writeRepeat(j, n, "0") }
func writeOnes(j *jsonWriter, n int)   { writeRepeat(j, n, "1") }
func writeFalses(j *jsonWriter, n int) { writeRepeat(j, n, "false") }
