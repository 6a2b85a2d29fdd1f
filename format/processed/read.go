package processed

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/goccy/go-json"
	"github.com/gprof-dev/gprof/format/internal/lifecycle"
	"github.com/gprof-dev/gprof/format/internal/limit"
	"github.com/gprof-dev/gprof/profile"
	"github.com/klauspost/compress/gzip"
)

// MinReadVersion is the oldest processed-format version Read understands:
// from 41 on, libs live in profile.libs and frame addresses are
// lib-relative with return addresses nudged.
const MinReadVersion = 41

// MaxReadVersion is the newest version Read understands.
const MaxReadVersion = 70

type rawProfile struct {
	Meta             *rawMeta      `json:"meta"`
	Libs             []rawLib      `json:"libs"`
	Shared           *rawTables    `json:"shared"`
	Threads          []rawThread   `json:"threads"`
	Counters         []rawCounter  `json:"counters"`
	ProfilerOverhead []rawOverhead `json:"profilerOverhead"`
}

// rawCounter is a counter: times in ms (or deltas between them), counts.
type rawCounter struct {
	Name        string          `json:"name"`
	Category    string          `json:"category"`
	Description string          `json:"description"`
	Pid         json.RawMessage `json:"pid"`
	Samples     struct {
		Time       []float64 `json:"time"`
		TimeDeltas []float64 `json:"timeDeltas"`
		Count      []float64 `json:"count"`
	} `json:"samples"`
}

// rawOverhead is a profilerOverhead entry: times in ms, durations in ns.
type rawOverhead struct {
	Samples struct {
		Time     []float64 `json:"time"`
		Locking  []float64 `json:"locking"`
		Cleaning []float64 `json:"expiredMarkerCleaning"`
		Counters []float64 `json:"counters"`
		Threads  []float64 `json:"threads"`
	} `json:"samples"`
}

type rawMeta struct {
	Version        *float64        `json:"version"`
	Preprocessed   *float64        `json:"preprocessedProfileVersion"`
	Product        string          `json:"product"`
	Interval       float64         `json:"interval"`
	StartTime      float64         `json:"startTime"`
	EndTime        *float64        `json:"endTime"`
	ProfilingStart *float64        `json:"profilingStartTime"`
	ProfilingEnd   *float64        `json:"profilingEndTime"`
	OSCPU          string          `json:"oscpu"`
	Platform       string          `json:"platform"`
	ABI            string          `json:"abi"`
	LogicalCPUs    int             `json:"logicalCPUs"`
	CPUName        string          `json:"CPUName"`
	Categories     []rawCategory   `json:"categories"`
	SampleUnits    *rawSampleUnits `json:"sampleUnits"`
	Extra          []rawExtra      `json:"extra"`
	Symbolicated   *bool           `json:"symbolicated"`
}

type rawCategory struct {
	Name  string `json:"name"`
	Color string `json:"color"`
}

type rawSampleUnits struct {
	ThreadCPUDelta string `json:"threadCPUDelta"`
}

type rawExtra struct {
	Label   string `json:"label"`
	Entries []struct {
		Label string          `json:"label"`
		Value json.RawMessage `json:"value"`
	} `json:"entries"`
}

type rawLib struct {
	Arch       string  `json:"arch"`
	Name       string  `json:"name"`
	Path       string  `json:"path"`
	DebugName  string  `json:"debugName"`
	DebugPath  string  `json:"debugPath"`
	BreakpadID string  `json:"breakpadId"`
	CodeID     *string `json:"codeId"`
}

// rawTables holds the tables that moved from threads to profile.shared over
// the versions; whichever level has them is used.
type rawTables struct {
	StackTable    *rawStackTable    `json:"stackTable"`
	FrameTable    *rawFrameTable    `json:"frameTable"`
	FuncTable     *rawFuncTable     `json:"funcTable"`
	ResourceTable *rawResourceTable `json:"resourceTable"`
	NativeSymbols *rawNativeSymbols `json:"nativeSymbols"`
	StringArray   []string          `json:"stringArray"`
	Sources       *rawSources       `json:"sources"`
}

type rawStackTable struct {
	Frame        column `json:"frame"`
	Prefix       column `json:"prefix"`
	PrefixOffset column `json:"prefixOffset"`
	Length       int    `json:"length"`
}

type rawFrameTable struct {
	Address     column `json:"address"`
	Lib         column `json:"lib"`
	InlineDepth column `json:"inlineDepth"`
	Category    column `json:"category"`
	Func        column `json:"func"`
	NativeSym   column `json:"nativeSymbol"`
	Line        column `json:"line"`
	Length      int    `json:"length"`
}

type rawFuncTable struct {
	Name     column `json:"name"`
	Resource column `json:"resource"`
	Source   column `json:"source"`
	FileName column `json:"fileName"`
	// LineNumber is where a script's function starts.
	LineNumber column `json:"lineNumber"`
	Length     int    `json:"length"`
}

type rawResourceTable struct {
	Lib    column `json:"lib"`
	Length int    `json:"length"`
}

type rawNativeSymbols struct {
	LibIndex     column `json:"libIndex"`
	Address      column `json:"address"`
	Name         column `json:"name"`
	FunctionSize column `json:"functionSize"`
	Length       int    `json:"length"`
}

type rawSources struct {
	Filename column `json:"filename"`
	Length   int    `json:"length"`
}

type rawThread struct {
	rawTables
	Name                string          `json:"name"`
	GprofName           *string         `json:"gprofName"`
	ProcessName         string          `json:"processName"`
	Pid                 json.RawMessage `json:"pid"`
	Tid                 json.RawMessage `json:"tid"`
	IsMainThread        *bool           `json:"isMainThread"`
	ProcessStartupTime  float64         `json:"processStartupTime"`
	ProcessShutdownTime *float64        `json:"processShutdownTime"`
	RegisterTime        float64         `json:"registerTime"`
	UnregisterTime      *float64        `json:"unregisterTime"`
	Samples             *rawSamples     `json:"samples"`
	Markers             *rawMarkers     `json:"markers"`
}

type rawSamples struct {
	Stack          column `json:"stack"`
	Time           column `json:"time"`
	TimeDeltas     column `json:"timeDeltas"`
	Weight         column `json:"weight"`
	ThreadCPUDelta column `json:"threadCPUDelta"`
	Length         int    `json:"length"`
}

type rawMarkers struct {
	Name      column            `json:"name"`
	StartTime column            `json:"startTime"`
	EndTime   column            `json:"endTime"`
	Phase     column            `json:"phase"`
	Category  column            `json:"category"`
	Data      []json.RawMessage `json:"data"`
	Length    int               `json:"length"`
}

// Read parses a processed profile, gzip-compressed or not, into the model.
// Lib-relative frame addresses become absolute ones inside a synthetic,
// non-overlapping mapping per lib, and symbol information goes into
// p.Symbols, so the result can be written again or symbolicated further.
// Every failure is reported as a single-line error.
//
// Input is untrusted: Read stops decompressing, and refuses to decode,
// past what the file's size pays for, and refuses strings longer than a
// profile needs (see format/internal/limit).
func Read(r io.Reader) (p *profile.Profile, err error) {
	defer func() {
		// The decoder and the conversion check what they index, but a
		// profile is untrusted input and a crash would lose the user's
		// whole session; report any slip as bad input instead.
		if e := recover(); e != nil {
			p, err = nil, fmt.Errorf("processed profile: malformed input (%v)", e)
		}
	}()
	data, err := readAll(r)
	if err != nil {
		return nil, err
	}
	var rp rawProfile
	if err := json.Unmarshal(data, &rp); err != nil {
		return nil, fmt.Errorf("processed profile: %s", jsonError(err, data))
	}
	return convert(&rp)
}

func readAll(r io.Reader) ([]byte, error) {
	file := limit.NewFile(r)
	br := bufio.NewReader(file)
	magic, _ := br.Peek(2)
	var src io.Reader = br
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("processed profile: gzip: %v", err)
		}
		src = limit.Inflated(zr, file)
	}
	data, err := io.ReadAll(src)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errTruncated{}
		}
		if errors.As(err, new(*limit.Error)) {
			return nil, fmt.Errorf("processed profile: %v", err)
		}
		return nil, fmt.Errorf("processed profile: read: %v", oneLine(err.Error()))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("processed profile: input is empty")
	}
	if err := checkSize(data, file.N()); err != nil {
		return nil, fmt.Errorf("processed profile: %v", err)
	}
	return data, nil
}

// objectCost is what decoding one JSON object may hold: a thread is the
// largest, in a slice that grows by doubling.
var objectCost = max(2*int(unsafe.Sizeof(rawThread{})), 512)

// checkSize refuses data before decoding it if a string in it is longer
// than any profile needs, or if decoding it would hold more than a file
// of fileSize bytes pays for (see format/internal/limit). The decoder's
// cost is estimated from counts of what it would build: objects, arrays,
// values and strings, the brackets and commas of strings included, which
// errs on the side of a higher cost.
func checkSize(data []byte, fileSize int64) error {
	var nstr, strBytes int
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			break
		}
		open := i + j
		end := open + 1
		for {
			k := bytes.IndexByte(data[end:], '"')
			if k < 0 {
				return nil // unterminated; the decoder says so
			}
			end += k
			if !escaped(data, end) {
				break
			}
			end++
		}
		if end-open-1 > limit.String {
			return fmt.Errorf("string longer than %s (more than a profile needs) at byte %d", limit.MB(limit.String), open)
		}
		nstr++
		strBytes += end - open - 1
		i = end + 1
	}
	held := int64(cap(data)) + int64(strBytes) + 32*int64(nstr) +
		int64(objectCost)*int64(bytes.Count(data, []byte("{"))) +
		48*int64(bytes.Count(data, []byte("["))) +
		16*int64(bytes.Count(data, []byte(",")))
	return limit.Check(held, fileSize)
}

// escaped reports whether the quote at data[i] is escaped: preceded by an
// odd number of backslashes.
func escaped(data []byte, i int) bool {
	n := 0
	for i > 0 && data[i-1] == '\\' {
		n++
		i--
	}
	return n%2 == 1
}

func jsonError(err error, data []byte) string {
	t := bytes.TrimSpace(data)
	if len(t) > 0 && t[0] != '{' {
		return "not a JSON object, so not a Firefox Profiler profile"
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		if se.Offset >= int64(len(t))-1 {
			return "JSON ends early; the file is probably truncated"
		}
		return fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, oneLine(se.Error()))
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("unexpected JSON value for %s: %s", te.Field, te.Value)
	}
	return oneLine(err.Error())
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// reader holds the state of one conversion.
type reader struct {
	rp   *rawProfile
	p    *profile.Profile
	libs []profile.Lib // synthetic mapping per profile lib
	// cpuScale converts threadCPUDelta values to ns; 0 means unknown.
	cpuScale float64
	ncat     int
	shapes   map[*rawStackTable]*stackShape
}

func convert(rp *rawProfile) (*profile.Profile, error) {
	m := rp.Meta
	if m == nil {
		return nil, errors.New("processed profile: no \"meta\" object; not a Firefox Profiler profile")
	}
	if m.Preprocessed == nil {
		if m.Version != nil {
			return nil, errors.New("processed profile: this is a Gecko profile (no meta.preprocessedProfileVersion), not a processed one")
		}
		return nil, errors.New("processed profile: meta.preprocessedProfileVersion is missing")
	}
	v := *m.Preprocessed
	if v > MaxReadVersion {
		return nil, fmt.Errorf("processed profile: version %v is newer than the newest supported (%d)", v, MaxReadVersion)
	}
	if v < MinReadVersion {
		return nil, fmt.Errorf("processed profile: version %v is older than the oldest supported (%d); open and re-save it in the Firefox Profiler to upgrade it", v, MinReadVersion)
	}
	p := &profile.Profile{Symbols: &profile.SymbolTable{}}
	r := &reader{rp: rp, p: p}
	r.meta()
	if err := r.mapLibs(); err != nil {
		return nil, err
	}
	// Threads group into processes by pid string, as in the front-end. The
	// images an exec made of one OS process share theirs (profile.TrackIDs),
	// so they read back as one Process, named after the chain of programs;
	// that keeps every summary's process count, while addresses stay
	// apart anyway, as every lib gets a range of its own here.
	procs := map[string]*profile.Process{}
	for i := range rp.Threads {
		t := &rp.Threads[i]
		th, exitCode, err := r.thread(t)
		if err != nil {
			return nil, fmt.Errorf("processed profile: thread %d (%q): %v", i, oneLine(t.Name), err)
		}
		pidKey := string(bytes.TrimSpace(t.Pid))
		pr := procs[pidKey]
		if pr == nil {
			pr = &profile.Process{
				Pid: parseID(t.Pid, -(len(procs) + 1)), Name: t.ProcessName,
				Start: msToNs(t.ProcessStartupTime), End: optMs(t.ProcessShutdownTime), ExitCode: -1,
			}
			procs[pidKey] = pr
			p.Processes = append(p.Processes, pr)
		}
		pr.Threads = append(pr.Threads, th)
		if exitCode != nil {
			pr.ExitCode = *exitCode
		}
		r.addLibs(pr, t)
	}
	for _, pr := range p.Processes {
		sort.Slice(pr.Libs, func(i, j int) bool { return pr.Libs[i].Start < pr.Libs[j].Start })
	}
	readCounters(rp, procs, p)
	if p.Meta.Duration == 0 {
		for _, pr := range p.Processes {
			for _, th := range pr.Threads {
				if n := len(th.Samples.Time); n > 0 {
					p.Meta.Duration = max(p.Meta.Duration, th.Samples.Time[n-1]+int64(p.Meta.Interval))
				}
			}
		}
	}
	return p, nil
}

// readCounters gives each process its counters (by the pid string the
// threads use) and the profile the first profilerOverhead.
func readCounters(rp *rawProfile, procs map[string]*profile.Process, p *profile.Profile) {
	for _, rc := range rp.Counters {
		pr := procs[string(bytes.TrimSpace(rc.Pid))]
		if pr == nil {
			continue
		}
		c := profile.Counter{Name: rc.Name, Category: rc.Category, Description: rc.Description}
		times := rc.Samples.Time
		if times == nil && rc.Samples.TimeDeltas != nil {
			t := 0.0
			for _, d := range rc.Samples.TimeDeltas {
				t += d
				times = append(times, t)
			}
		}
		for i, t := range times {
			if i >= len(rc.Samples.Count) {
				break
			}
			c.Time = append(c.Time, msToNs(t))
			c.Count = append(c.Count, int64(rc.Samples.Count[i]))
		}
		pr.Counters = append(pr.Counters, c)
	}
	for _, ro := range rp.ProfilerOverhead {
		sm := &ro.Samples
		if len(sm.Time) == 0 {
			continue
		}
		at := func(v []float64, i int) int64 {
			if i < len(v) {
				return int64(v[i])
			}
			return 0
		}
		o := &profile.Overhead{}
		for i, t := range sm.Time {
			o.Time = append(o.Time, msToNs(t))
			o.Counters = append(o.Counters, at(sm.Counters, i))
			o.Threads = append(o.Threads, at(sm.Threads, i)+at(sm.Locking, i)+at(sm.Cleaning, i))
		}
		p.Overhead = o
		break
	}
}

func msToNs(ms float64) int64 {
	if math.IsNaN(ms) || math.IsInf(ms, 0) || math.Abs(ms) > 9e12 {
		return 0
	}
	return int64(math.Round(ms * 1e6))
}

func optMs(ms *float64) int64 {
	if ms == nil {
		return -1
	}
	return msToNs(*ms)
}

// parseID reads a pid or tid, which may be a number or a string. Merged
// profiles and reused pids use "123.1"; the part before the dot is the OS
// id. Anything else gets fallback.
func parseID(raw json.RawMessage, fallback int) int {
	s := strings.Trim(string(bytes.TrimSpace(raw)), `"`)
	s, _, _ = strings.Cut(s, ".")
	if n, err := strconv.Atoi(s); err == nil && n >= math.MinInt32 && n <= math.MaxInt32 {
		return n
	}
	return fallback
}

func (r *reader) meta() {
	m, pm := r.rp.Meta, &r.p.Meta
	pm.Product = m.Product
	pm.StartTime = time.Unix(0, msToNs(m.StartTime))
	if m.StartTime == 0 {
		pm.StartTime = time.Time{}
	}
	pm.Interval = time.Duration(msToNs(m.Interval))
	pm.OSCPU, pm.Platform, pm.CPUName, pm.LogicalCPUs = m.OSCPU, m.Platform, m.CPUName, m.LogicalCPUs
	pm.Arch, _, _ = strings.Cut(m.ABI, "-")
	switch {
	case m.ProfilingEnd != nil:
		start := 0.0
		if m.ProfilingStart != nil {
			start = *m.ProfilingStart
		}
		pm.Duration = msToNs(*m.ProfilingEnd - min(start, 0))
		pm.DataStart = msToNs(max(start, 0))
	case m.EndTime != nil && *m.EndTime > m.StartTime:
		pm.Duration = msToNs(*m.EndTime - m.StartTime)
	}
	for _, c := range m.Categories {
		pm.Categories = append(pm.Categories, profile.CategoryInfo{Name: c.Name, Color: c.Color})
	}
	r.ncat = len(pm.Categories)
	if r.ncat == 0 {
		r.ncat = len(profile.DefaultCategories)
	}
	if m.SampleUnits != nil {
		switch m.SampleUnits.ThreadCPUDelta {
		case "µs":
			r.cpuScale = 1e3
		case "ns":
			r.cpuScale = 1
		}
	}
	for _, e := range m.Extra {
		if e.Label != extraLabel {
			continue
		}
		for _, en := range e.Entries {
			if en.Label == lostEventsLabel {
				var n uint64
				if json.Unmarshal(en.Value, &n) == nil {
					pm.LostEvents = n
				}
				continue
			}
			var s string
			if json.Unmarshal(en.Value, &s) == nil {
				if pm.Extra == nil {
					pm.Extra = map[string]string{}
				}
				pm.Extra[en.Label] = s
			}
		}
	}
}

// synthetic mappings start at 4 GiB, above where small test programs and
// null-pointer guards live, and are separated by a 1 MiB gap.
const (
	synthBase  = 1 << 32
	synthGap   = 1 << 20
	synthAlign = 1 << 16
)

// mapLibs gives every profile lib an address range large enough for every
// relative address the profile uses in it.
func (r *reader) mapLibs() error {
	n := len(r.rp.Libs)
	size := make([]uint64, n)
	grow := func(lib int, end float64) {
		if lib >= 0 && lib < n && end > 0 && end < 1<<48 {
			size[lib] = max(size[lib], uint64(end))
		}
	}
	visit := func(t *rawTables) {
		if t == nil || t.FrameTable == nil {
			return
		}
		ft := t.FrameTable
		for i := range ft.Address {
			if !ft.Address.isNull(i) {
				grow(r.frameLib(t, i), ft.Address[i]+2)
			}
		}
		if ns := t.NativeSymbols; ns != nil {
			for i := 0; i < len(ns.LibIndex) && i < len(ns.Address); i++ {
				end := ns.Address[i] + 1
				if i < len(ns.FunctionSize) && !ns.FunctionSize.isNull(i) {
					end += ns.FunctionSize[i]
				}
				grow(ns.LibIndex.index(i), end)
			}
		}
	}
	visit(r.rp.Shared)
	for i := range r.rp.Threads {
		visit(&r.rp.Threads[i].rawTables)
	}
	next := uint64(synthBase)
	r.libs = make([]profile.Lib, n)
	for i, l := range r.rp.Libs {
		sz := (size[i] + synthAlign - 1) &^ (synthAlign - 1)
		if sz == 0 {
			sz = synthAlign
		}
		codeID := ""
		if l.CodeID != nil {
			codeID = *l.CodeID
		}
		r.libs[i] = profile.Lib{
			Start: next, End: next + sz, Offset: 0,
			Name: l.Name, Path: l.Path, DebugName: l.DebugName, DebugPath: l.DebugPath,
			BreakpadID: l.BreakpadID, CodeID: codeID, Arch: l.Arch,
		}
		next += sz + synthGap
	}
	return nil
}

// frameLib returns the lib of frame i: the frame's own column from version
// 70, else through its func's resource.
func (r *reader) frameLib(t *rawTables, i int) int {
	ft := t.FrameTable
	if ft.Lib != nil {
		if i < len(ft.Lib) {
			return ft.Lib.index(i)
		}
		return -1
	}
	if t.FuncTable == nil || t.ResourceTable == nil || i >= len(ft.Func) {
		return -1
	}
	fn := ft.Func.index(i)
	if fn < 0 || fn >= len(t.FuncTable.Resource) {
		return -1
	}
	res := t.FuncTable.Resource.index(fn)
	if res < 0 || res >= len(t.ResourceTable.Lib) {
		return -1
	}
	return t.ResourceTable.Lib.index(res)
}

// addLibs adds to pr the mappings of the libs that t's samples reach.
func (r *reader) addLibs(pr *profile.Process, t *rawThread) {
	have := map[uint64]bool{}
	for _, l := range pr.Libs {
		have[l.Start] = true
	}
	th := pr.Threads[len(pr.Threads)-1]
	for _, f := range th.Frames.Frames {
		if f.Label != "" {
			continue
		}
		if l := profile.FindLib(r.libs, f.Address); l != nil && !have[l.Start] {
			have[l.Start] = true
			pr.Libs = append(pr.Libs, *l)
		}
	}
}

// tables returns the tables thread t uses: its own (before version 60) or
// the shared ones, string array and sources included.
func (r *reader) tables(t *rawThread) (*rawTables, error) {
	tb := t.rawTables
	sh := r.rp.Shared
	if sh != nil {
		if tb.StackTable == nil {
			tb.StackTable = sh.StackTable
		}
		if tb.FrameTable == nil {
			tb.FrameTable = sh.FrameTable
		}
		if tb.FuncTable == nil {
			tb.FuncTable = sh.FuncTable
		}
		if tb.ResourceTable == nil {
			tb.ResourceTable = sh.ResourceTable
		}
		if tb.NativeSymbols == nil {
			tb.NativeSymbols = sh.NativeSymbols
		}
		if tb.StringArray == nil {
			tb.StringArray = sh.StringArray
		}
		if tb.Sources == nil {
			tb.Sources = sh.Sources
		}
	}
	switch {
	case tb.StackTable == nil:
		return nil, errors.New("no stack table")
	case tb.FrameTable == nil:
		return nil, errors.New("no frame table")
	case tb.FuncTable == nil:
		return nil, errors.New("no func table")
	}
	st, ft, fn := tb.StackTable, tb.FrameTable, tb.FuncTable
	if st.PrefixOffset == nil && st.Prefix == nil && len(st.Frame) > 0 {
		return nil, errors.New("stack table has neither prefixOffset nor prefix")
	}
	if st.PrefixOffset != nil && len(st.PrefixOffset) != len(st.Frame) || st.PrefixOffset == nil && st.Prefix != nil && len(st.Prefix) != len(st.Frame) {
		return nil, errors.New("stack table columns differ in length")
	}
	nf := len(ft.Func)
	if len(ft.Address) != nf || (ft.InlineDepth != nil && len(ft.InlineDepth) != nf) ||
		(ft.Category != nil && len(ft.Category) != nf) || (ft.NativeSym != nil && len(ft.NativeSym) != nf) ||
		(ft.Line != nil && len(ft.Line) != nf) || (ft.Lib != nil && len(ft.Lib) != nf) {
		return nil, errors.New("frame table columns differ in length")
	}
	if fn.Resource != nil && len(fn.Resource) != len(fn.Name) {
		return nil, errors.New("func table columns differ in length")
	}
	return &tb, nil
}

// thread reads one thread, and the exit code its process exit marker
// carries, if any.
func (r *reader) thread(t *rawThread) (*profile.Thread, *int, error) {
	tb, err := r.tables(t)
	if err != nil {
		return nil, nil, err
	}
	th := &profile.Thread{
		Tid: parseID(t.Tid, 0), Name: t.Name,
		Start: msToNs(t.RegisterTime), End: optMs(t.UnregisterTime),
	}
	if t.GprofName != nil {
		// Write names the thread that holds a process track GeckoMain.
		th.Name = *t.GprofName
	}
	if t.IsMainThread != nil {
		th.Main = *t.IsMainThread
	} else {
		th.Main = th.Tid != 0 && parseID(t.Pid, -1) == th.Tid
	}
	sm := t.Samples
	if sm == nil {
		return nil, nil, errors.New("no samples table")
	}
	n := len(sm.Stack)
	times := sm.Time
	deltas := times == nil
	if deltas {
		times = sm.TimeDeltas
	}
	if times == nil && n > 0 {
		return nil, nil, errors.New("samples have neither time nor timeDeltas")
	}
	if deltas && n == 0 && len(times) == 1 {
		// The front-end shifts a subprocess's samples by adding its start
		// time to timeDeltas[0], which on a thread without samples makes
		// a column of one (null in JSON): what it writes for every child
		// process that was not sampled (adjustTableTimeDeltas).
		times = nil
	}
	if len(times) != n || (sm.Weight != nil && len(sm.Weight) != n) || (sm.ThreadCPUDelta != nil && len(sm.ThreadCPUDelta) != n) {
		return nil, nil, errors.New("sample table columns differ in length")
	}
	sc := newStackConv(r, tb, th)
	if err := sc.prepare(sm.Stack); err != nil {
		return nil, nil, err
	}
	s := &th.Samples
	s.Stack = make([]int32, n)
	s.Time = make([]int64, n)
	s.CPUDelta = make([]int64, n)
	if sm.Weight != nil {
		s.Weight = make([]int32, n)
	}
	var now int64
	for i := 0; i < n; i++ {
		s.Stack[i] = sc.leafStack(sm.Stack.index(i))
		if deltas {
			now += msToNs(times[i])
		} else {
			now = msToNs(times[i])
		}
		s.Time[i] = now
		s.CPUDelta[i] = -1
		if sm.ThreadCPUDelta != nil && r.cpuScale != 0 && !sm.ThreadCPUDelta.isNull(i) && sm.ThreadCPUDelta[i] >= 0 {
			s.CPUDelta[i] = int64(math.Round(sm.ThreadCPUDelta[i] * r.cpuScale))
		}
		if s.Weight != nil {
			w := sm.Weight[i]
			if math.IsNaN(w) || math.Abs(w) > math.MaxInt32 {
				w = 1
			}
			s.Weight[i] = int32(w)
		}
	}
	exitCode, err := r.markers(t, tb, th)
	if err != nil {
		return nil, nil, err
	}
	return th, exitCode, nil
}

func (r *reader) markers(t *rawThread, tb *rawTables, th *profile.Thread) (exitCode *int, err error) {
	mk := t.Markers
	if mk == nil {
		return nil, nil
	}
	n := len(mk.Name)
	if len(mk.StartTime) != n || len(mk.EndTime) != n || len(mk.Phase) != n || (mk.Category != nil && len(mk.Category) != n) || (mk.Data != nil && len(mk.Data) != n) {
		return nil, errors.New("marker table columns differ in length")
	}
	for i := 0; i < n; i++ {
		m := profile.Marker{Name: r.string(tb, mk.Name.index(i))}
		if ph := mk.Phase.index(i); ph >= 0 && ph <= int(profile.PhaseIntervalEnd) {
			m.Phase = profile.MarkerPhase(ph)
		}
		if !mk.StartTime.isNull(i) {
			m.Start = msToNs(mk.StartTime[i])
		}
		if !mk.EndTime.isNull(i) {
			m.End = msToNs(mk.EndTime[i])
		}
		switch m.Phase {
		case profile.PhaseInstant, profile.PhaseIntervalStart:
			m.End = m.Start
		case profile.PhaseIntervalEnd:
			m.Start = m.End
		}
		if mk.Category != nil {
			m.Category = r.category(mk.Category.index(i))
		}
		if mk.Data != nil {
			var d map[string]any
			if json.Unmarshal(mk.Data[i], &d) == nil && !(len(d) == 1 && d["type"] == lifecycleType) {
				m.Data = d
			}
			if typ, _ := d["type"].(string); lifecycle.IsLifecycle(typ) {
				// Derived from the lifetimes, which Write adds again;
				// only the exit code is not kept elsewhere.
				if c, ok := d["exitCode"].(float64); ok && typ == lifecycle.ProcessType {
					exitCode = new(int(c))
				}
				continue
			}
		}
		th.Markers = append(th.Markers, m)
	}
	return exitCode, nil
}

func (r *reader) category(c int) profile.Category {
	if c < 0 || c >= r.ncat || c > math.MaxUint8 {
		return profile.CategoryOther
	}
	return profile.Category(c)
}

func (r *reader) string(tb *rawTables, i int) string {
	if i < 0 || i >= len(tb.StringArray) {
		return ""
	}
	return tb.StringArray[i]
}

// stackConv turns one thread's processed stacks into model stacks. The
// processed tables expand inline frames into stack nodes of their own and
// store callers' addresses nudged; the model wants one frame per address
// and raw return addresses, so a run of inline nodes at one address folds
// into one model frame and a caller's address gets its byte back.
type stackConv struct {
	r     *reader
	tb    *rawTables
	th    *profile.Thread
	shape *stackShape
	// leaf and caller map a stack to the model stack for each role; only
	// entries the thread uses are meaningful.
	leaf, caller []int32
	// frames caches model frames by processed frame and role.
	frames map[[2]int32]int32
}

// stackShape is what the conversion needs to know about a stack table
// regardless of thread, computed once per table because from version 60
// all threads share one.
type stackShape struct {
	// prefix[i] is stack i's parent, -1 for roots.
	prefix []int32
	// base[i] is the parent of the inline run that stack i ends: the
	// closest ancestor at a different address.
	base []int32
	err  error
	// role, leaf and caller are scratch space for one thread at a time,
	// kept to avoid allocating table-sized arrays per thread.
	role         []uint8
	leaf, caller []int32
}

func newStackConv(r *reader, tb *rawTables, th *profile.Thread) *stackConv {
	return &stackConv{r: r, tb: tb, th: th, frames: map[[2]int32]int32{}}
}

const (
	roleLeaf   = 1
	roleCaller = 2
)

func (sc *stackConv) depth(f int) int {
	d := sc.tb.FrameTable.InlineDepth
	if d == nil {
		return 0
	}
	return max(d.index(f), 0)
}

// sameAddress reports whether frames f and g stand for the same instruction,
// as the frames of one inline expansion do.
func (sc *stackConv) sameAddress(f, g int) bool {
	ft := sc.tb.FrameTable
	return ft.Address[f] == ft.Address[g] && sc.r.frameLib(sc.tb, f) == sc.r.frameLib(sc.tb, g)
}

func (sc *stackConv) computeShape() *stackShape {
	st := sc.tb.StackTable
	ns := len(st.Frame)
	nf := len(sc.tb.FrameTable.Func)
	sh := &stackShape{prefix: make([]int32, ns), base: make([]int32, ns)}
	for i := 0; i < ns; i++ {
		f := st.Frame.index(i)
		if f < 0 || f >= nf {
			sh.err = fmt.Errorf("stack %d: frame %v out of range (frame table has %d)", i, st.Frame[i], nf)
			return sh
		}
		p := -1
		if st.PrefixOffset != nil {
			off := st.PrefixOffset.index(i)
			if off < 0 || off > i {
				sh.err = fmt.Errorf("stack %d: bad prefixOffset %v", i, st.PrefixOffset[i])
				return sh
			}
			if off > 0 {
				p = i - off
			}
		} else if !st.Prefix.isNull(i) {
			p = st.Prefix.index(i)
			if p < 0 || p >= i {
				sh.err = fmt.Errorf("stack %d: prefix %v is not an earlier stack", i, st.Prefix[i])
				return sh
			}
		}
		sh.prefix[i] = int32(p)
		sh.base[i] = int32(p)
		if p >= 0 {
			pf := st.Frame.index(p)
			if d := sc.depth(f); d > 0 && sc.depth(pf) == d-1 && sc.sameAddress(f, pf) {
				sh.base[i] = sh.base[p]
			}
		}
	}
	return sh
}

// prepare converts the stacks the thread's samples reach, and only those:
// a shared stack table holds every thread's stacks.
func (sc *stackConv) prepare(samples column) error {
	st := sc.tb.StackTable
	if sc.r.shapes == nil {
		sc.r.shapes = map[*rawStackTable]*stackShape{}
	}
	sh := sc.r.shapes[st]
	if sh == nil {
		sh = sc.computeShape()
		sc.r.shapes[st] = sh
	}
	if sh.err != nil {
		return sh.err
	}
	sc.shape = sh
	ns := len(st.Frame)
	if sh.role == nil {
		sh.role = make([]uint8, ns)
		sh.leaf = make([]int32, ns)
		sh.caller = make([]int32, ns)
	}
	role := sh.role
	var order []int32
	defer func() {
		for _, i := range order {
			role[i] = 0
		}
	}()
	for i := range samples {
		if samples.isNull(i) {
			continue
		}
		s := samples.index(i)
		if s < 0 || s >= ns {
			return fmt.Errorf("sample %d: stack %v out of range (stack table has %d)", i, samples[i], ns)
		}
		if role[s]&roleLeaf != 0 {
			continue
		}
		if role[s] == 0 {
			order = append(order, int32(s))
		}
		role[s] |= roleLeaf
		for b := sh.base[s]; b >= 0 && role[b]&roleCaller == 0; b = sh.base[b] {
			if role[b] == 0 {
				order = append(order, b)
			}
			role[b] |= roleCaller
		}
	}
	slices.Sort(order)
	sc.leaf, sc.caller = sh.leaf, sh.caller
	for _, i := range order {
		parent := profile.NoStack
		if b := sh.base[i]; b >= 0 {
			parent = sc.caller[b]
		}
		sc.leaf[i], sc.caller[i] = profile.NoStack, profile.NoStack
		if role[i]&roleLeaf != 0 {
			sc.leaf[i] = sc.th.Stacks.Intern(parent, sc.frame(int(i), false))
		}
		if role[i]&roleCaller != 0 {
			sc.caller[i] = sc.th.Stacks.Intern(parent, sc.frame(int(i), true))
		}
	}
	return nil
}

// leafStack returns the model stack of a sample's stack s, which prepare
// has checked and converted.
func (sc *stackConv) leafStack(s int) int32 {
	if s < 0 || s >= len(sc.leaf) {
		return profile.NoStack
	}
	return sc.leaf[s]
}

// frame returns the model frame for the inline run ending at stack i.
func (sc *stackConv) frame(i int, caller bool) int32 {
	tb := sc.tb
	ft := tb.FrameTable
	f := tb.StackTable.Frame.index(i)
	key := [2]int32{int32(f), 0}
	if caller {
		key[1] = 1
	}
	if m, ok := sc.frames[key]; ok {
		return m
	}
	cat := profile.CategoryOther
	if ft.Category != nil {
		cat = sc.r.category(ft.Category.index(f))
	}
	fn := ft.Func.index(f)
	name := ""
	if fn >= 0 && fn < len(tb.FuncTable.Name) {
		name = sc.r.string(tb, tb.FuncTable.Name.index(fn))
	}
	var mf profile.Frame
	lib := sc.r.frameLib(tb, f)
	addr := ft.Address[f]
	switch {
	case lib >= 0 && lib < len(sc.r.libs) && addr >= 0 && addr < 1<<48:
		rel := uint64(addr)
		if caller {
			rel++
		}
		l := &sc.r.libs[lib]
		mf = profile.Frame{Address: l.Start + rel, Category: cat}
		// Symbols are filed where they were looked up: the nudged
		// address for a caller (see profile.LookupAddr).
		sc.symbols(i, l.Key(), uint64(addr))
	case strings.HasPrefix(name, "0x"):
		if a, err := strconv.ParseUint(name[2:], 16, 64); err == nil {
			mf = profile.Frame{Address: a, Category: cat}
			break
		}
		fallthrough
	default:
		if name == "" {
			name = "(unknown)"
		}
		mf = profile.Frame{Label: name, Category: cat}
		if cat == profile.CategoryPython && fn >= 0 {
			// A script's frame (gprof's Python frames): its file and
			// lines come back.
			if mf.File = sc.file(fn); mf.File != "" {
				if f < len(ft.Line) {
					mf.Line = int32(max(ft.Line.index(f), 0))
				}
				if fn < len(tb.FuncTable.LineNumber) {
					mf.FuncLine = int32(max(tb.FuncTable.LineNumber.index(fn), 0))
				}
			}
		}
	}
	m := sc.th.Frames.Intern(mf)
	sc.frames[key] = m
	return m
}

// symbols records what the inline run ending at stack i says about the
// lib-relative address rel, unless the address already has symbols.
func (sc *stackConv) symbols(i int, k profile.LibKey, rel uint64) {
	st := sc.r.p.Symbols
	if st.Lookup(k, rel) != nil {
		return
	}
	tb := sc.tb
	ft, fnt := tb.FrameTable, tb.FuncTable
	var run []int
	sh := sc.shape
	for s := i; s >= 0 && s != int(sh.base[i]); s = int(sh.prefix[s]) {
		run = append(run, tb.StackTable.Frame.index(s))
	}
	frames := make([]profile.SymbolFrame, len(run))
	for d := range run {
		f := run[len(run)-1-d]
		sf := &frames[d]
		fn := ft.Func.index(f)
		if fn < 0 || fn >= len(fnt.Name) {
			return
		}
		sf.Function = sc.r.string(tb, fnt.Name.index(fn))
		if unsymbolicated(sf.Function) && (ft.NativeSym == nil || ft.NativeSym.isNull(f)) {
			// Still an unsymbolicated address.
			return
		}
		sf.File = sc.file(fn)
		if ft.Line != nil && !ft.Line.isNull(f) && ft.Line[f] > 0 && ft.Line[f] < math.MaxInt32 {
			sf.Line = int(ft.Line[f])
		}
		if d == 0 && ft.NativeSym != nil {
			if ns := ft.NativeSym.index(f); ns >= 0 && tb.NativeSymbols != nil && ns < len(tb.NativeSymbols.Address) {
				nst := tb.NativeSymbols
				if a := nst.Address[ns]; a >= 0 && a < 1<<48 {
					sf.FuncAddr = uint64(a)
				}
				if ns < len(nst.FunctionSize) && !nst.FunctionSize.isNull(ns) && nst.FunctionSize[ns] > 0 && nst.FunctionSize[ns] < 1<<48 {
					sf.FuncSize = uint64(nst.FunctionSize[ns])
				}
			}
		}
	}
	if len(frames) > 0 {
		st.Add(k, rel, frames)
	}
}

// unsymbolicated reports whether a function name is what writers call an
// address nothing resolved: "0x5638ab12" (the front-end, and gprof before
// it named them by library) or "LIB+0x52a7".
func unsymbolicated(name string) bool {
	if strings.HasPrefix(name, "0x") {
		return true
	}
	i := strings.LastIndex(name, "+0x")
	if i <= 0 || i+3 == len(name) {
		return false
	}
	for _, c := range name[i+3:] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// file returns func fn's source file: through the sources table from
// version 58, else the func's own fileName string.
func (sc *stackConv) file(fn int) string {
	tb := sc.tb
	fnt := tb.FuncTable
	if fnt.Source != nil {
		if fn >= len(fnt.Source) || tb.Sources == nil {
			return ""
		}
		src := fnt.Source.index(fn)
		if src < 0 || src >= len(tb.Sources.Filename) {
			return ""
		}
		return sc.r.string(tb, tb.Sources.Filename.index(src))
	}
	if fn < len(fnt.FileName) {
		return sc.r.string(tb, fnt.FileName.index(fn))
	}
	return ""
}

// errTruncated is a gzip stream that ends early; it unwraps to
// io.ErrUnexpectedEOF, so that callers can tell a file cut short.
type errTruncated struct{}

func (errTruncated) Error() string { return "processed profile: gzip stream is truncated" }
func (errTruncated) Unwrap() error { return io.ErrUnexpectedEOF }
