package gecko

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-json"
	"github.com/gprof-dev/gprof/format/internal/intern"
	"github.com/gprof-dev/gprof/format/internal/jsonw"
	"github.com/gprof-dev/gprof/format/internal/lifecycle"
	"github.com/gprof-dev/gprof/internal/atomicfile"
	"github.com/gprof-dev/gprof/profile"
	"github.com/klauspost/compress/gzip"
)

// Version is the Gecko profile format version Write produces and the newest
// Read accepts.
const Version = 36

// Write writes p to w as a Gecko profile that the Firefox Profiler loads.
// It streams: memory use does not grow with the number of samples.
func Write(w io.Writer, p *profile.Profile) error {
	if err := check(p); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	pw := &profileWriter{e: jsonw.NewWriter(bw), p: p, cats: categoriesOf(&p.Meta), ids: profile.NewTrackIDs(p)}
	pw.write()
	if pw.e.Err() != nil {
		return pw.e.Err()
	}
	return bw.Flush()
}

// WriteFile writes p to path, gzipped when path ends in ".gz" (in any
// case). A regular file is written as a temporary file next to it and
// renamed into place only once complete and synced, so a failure leaves
// any previous file at path intact; a device or FIFO is written in place
// (see internal/atomicfile).
func WriteFile(path string, p *profile.Profile) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		if strings.HasSuffix(strings.ToLower(path), ".gz") {
			return WriteGzip(w, p)
		}
		return Write(w, p)
	})
}

// WriteGzip writes p to w as a gzipped Gecko profile, compressing for speed
// on a goroutine of its own.
func WriteGzip(w io.Writer, p *profile.Profile) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	aw := newAheadWriter(zw)
	err = Write(aw, p)
	if cerr := aw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return zw.Close()
}

// check rejects profiles whose indices would make the front-end fail, before
// anything is written.
func check(p *profile.Profile) error {
	if p == nil {
		return errNoProfile
	}
	ncat := len(categoriesOf(&p.Meta))
	for _, proc := range p.Processes {
		for _, th := range proc.Threads {
			where := func(format string, args ...any) error {
				return fmt.Errorf("gecko: process %d thread %d: %s", proc.Pid, th.Tid, fmt.Sprintf(format, args...))
			}
			nf := int32(th.Frames.Len())
			for i, f := range th.Frames.Frames {
				if int(f.Category) >= ncat {
					return where("frame %d has category %d of %d", i, f.Category, ncat)
				}
			}
			st := &th.Stacks
			if len(st.Prefix) != len(st.Frame) {
				return where("stack table columns differ in length")
			}
			for i := range st.Frame {
				if st.Frame[i] < 0 || st.Frame[i] >= nf {
					return where("stack %d has frame %d of %d", i, st.Frame[i], nf)
				}
				if st.Prefix[i] < profile.NoStack || st.Prefix[i] >= int32(i) {
					return where("stack %d has prefix %d", i, st.Prefix[i])
				}
			}
			ns := int32(st.Len())
			tables := []*profile.SampleTable{&th.Samples}
			for k := range th.Events {
				tables = append(tables, &th.Events[k].Samples)
			}
			for _, s := range tables {
				if len(s.Time) != len(s.Stack) ||
					(s.CPUDelta != nil && len(s.CPUDelta) != len(s.Stack)) ||
					(s.Weight != nil && len(s.Weight) != len(s.Stack)) {
					return where("sample table columns differ in length")
				}
				for i, x := range s.Stack {
					if x < profile.NoStack || x >= ns {
						return where("sample %d has stack %d of %d", i, x, ns)
					}
				}
			}
			for i := range th.Markers {
				m := &th.Markers[i]
				if int(m.Category) >= ncat {
					return where("marker %q has category %d of %d", m.Name, m.Category, ncat)
				}
				if m.Phase > profile.PhaseIntervalEnd {
					return where("marker %q has phase %d", m.Name, m.Phase)
				}
				if m.Cause < 0 || m.Cause > ns {
					return where("marker %q has cause stack %d of %d", m.Name, m.Cause-1, ns)
				}
			}
		}
	}
	return nil
}

// categoriesOf returns the categories to declare. The front-end needs a grey
// one as the default, so one is appended when the model has none; appending
// keeps every existing index valid.
func categoriesOf(m *profile.Meta) []profile.CategoryInfo {
	cats := m.Categories
	if cats == nil {
		cats = profile.DefaultCategories
	}
	for _, c := range cats {
		if c.Color == "grey" {
			return cats
		}
	}
	return append(cats[:len(cats):len(cats)], profile.CategoryInfo{Name: "Other", Color: "grey"})
}

type profileWriter struct {
	e    *jsonw.Writer
	p    *profile.Profile
	cats []profile.CategoryInfo
	// ids names processes and threads as the front-end needs them (see
	// profile.TrackIDs: one process track per OS process, exec images
	// included, and no tid twice).
	ids *profile.TrackIDs

	// Per-thread string table, reused across threads.
	strs intern.Strings
}

func (w *profileWriter) write() {
	e := w.e
	var top *profile.Process
	if len(w.p.Processes) > 0 {
		top = w.p.Processes[0]
	}
	e.Raw(`{"meta":`)
	w.meta(top, 0, true)
	w.processBody(top, 0)
	w.overhead(w.p.Overhead)
	e.Raw(`,"processes":[`)
	if len(w.p.Processes) > 1 {
		for i, proc := range w.p.Processes[1:] {
			if i > 0 {
				e.Byte(',')
			}
			base := max(proc.Start, 0)
			e.Raw(`{"meta":`)
			w.meta(proc, base, false)
			w.processBody(proc, base)
			e.Raw(`,"processes":[]}`)
			if e.Err() != nil {
				return
			}
		}
	}
	e.Byte(']')
	if w.p.Symbols != nil {
		e.Raw(`,"gprofSymbols":`)
		writeSymbols(e, w.p.Symbols)
	}
	e.Raw("}\n")
}

// meta writes a process's meta object. Subprocesses get the short form the
// front-end expects of them, with startTime moved to base so their times
// line up after the front-end shifts them.
func (w *profileWriter) meta(proc *profile.Process, base int64, full bool) {
	e := w.e
	m := &w.p.Meta
	e.Raw(`{"version":`)
	e.Int(Version)
	e.Raw(`,"startTime":`)
	e.Ms(m.StartTime.UnixNano() + base)
	e.Raw(`,"shutdownTime":`)
	if proc != nil && proc.End >= 0 {
		e.Ms(proc.End - base)
	} else {
		e.Raw("null")
	}
	e.Raw(`,"categories":[`)
	for i, c := range w.cats {
		if i > 0 {
			e.Byte(',')
		}
		e.Raw(`{"name":`)
		e.JSString(c.Name)
		e.Raw(`,"color":`)
		e.JSString(c.Color)
		e.Raw(`,"subcategories":["Other"]}`)
	}
	e.Raw(`],"markerSchema":[`)
	for i, s := range lifecycle.Schema("data") {
		if i > 0 {
			e.Byte(',')
		}
		e.Raw(s)
	}
	e.Byte(']')
	if full {
		product := m.Product
		if product == "" {
			product = "gprof"
		}
		e.Raw(`,"interval":`)
		e.Ms(int64(m.Interval))
		e.Raw(`,"stackwalk":1,"debug":0,"gcpoison":0,"asyncstack":0,"processType":0,"product":`)
		e.JSString(product)
		w.optString("oscpu", m.OSCPU)
		w.optString("platform", m.Platform)
		w.optString("abi", m.Arch)
		if m.LogicalCPUs > 0 {
			e.Raw(`,"logicalCPUs":`)
			e.Int(int64(m.LogicalCPUs))
		}
		w.optString("CPUName", m.CPUName)
		e.Raw(`,"profilingStartTime":`)
		e.Ms(m.DataStart)
		e.Raw(`,"profilingEndTime":`)
		e.Ms(m.Duration)
		e.Raw(`,"sampleUnits":{"time":"ms","eventDelay":"ms","threadCPUDelta":"µs"}`)
		// The front-end copies only the meta fields it knows, so this
		// object rides along unseen by it.
		e.Raw(`,"gprof":{"lostEvents":`)
		e.Uint(m.LostEvents)
		if len(m.Extra) > 0 {
			e.Raw(`,"extra":`)
			w.json(m.Extra)
		}
		e.Byte('}')
	}
	e.Byte('}')
}

func (w *profileWriter) optString(key, v string) {
	if v == "" {
		return
	}
	e := w.e
	e.Raw(`,"`)
	e.Raw(key)
	e.Raw(`":`)
	e.JSString(v)
}

// json writes a small value with goccy/go-json, which sorts map keys and so
// keeps the output deterministic.
func (w *profileWriter) json(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		if w.e.Err() == nil {
			w.e.Fail(fmt.Errorf("gecko: encoding %T: %w", v, err))
		}
		return
	}
	w.e.Bytes(b)
}

// processBody writes the fields after meta that every process object has.
func (w *profileWriter) processBody(proc *profile.Process, base int64) {
	e := w.e
	e.Raw(`,"libs":[`)
	if proc != nil {
		libs := profile.SortLibs(append([]profile.Lib(nil), proc.Libs...))
		for i := range libs {
			if i > 0 {
				e.Byte(',')
			}
			w.lib(&libs[i])
		}
	}
	e.Raw(`],"threads":[`)
	if proc != nil {
		for i, th := range proc.Threads {
			if i > 0 {
				e.Byte(',')
			}
			w.thread(proc, th, base, eventIndex{owner: -1})
			if e.Err() != nil {
				return
			}
		}
		// Each other event's samples: a thread of their own, after all
		// the process's threads (see eventThread).
		for i, th := range proc.Threads {
			for k := range th.Events {
				e.Byte(',')
				w.thread(proc, th, base, eventIndex{owner: i, event: k})
				if e.Err() != nil {
					return
				}
			}
		}
	}
	e.Byte(']')
	w.pausedRanges()
	e.Raw(`,"sources":{"schema":{"id":0,"filename":1,"startLine":2,"startColumn":3,"sourceMapURL":4},"data":[]}`)
	if proc != nil {
		own := proc.Counters
		if w.movedFrom(proc) {
			own = nil
		}
		if moved := w.movedTo(proc); len(own) > 0 || len(moved) > 0 {
			w.counters(own, moved, base)
		}
	}
	if proc != nil {
		// The front-end ignores keys it does not know; this keeps what
		// the Gecko fields cannot say about the process.
		e.Raw(`,"gprofProcess":{"pid":`)
		e.Int(int64(proc.Pid))
		e.Raw(`,"name":`)
		e.JSString(proc.Name)
		e.Raw(`,"start":`)
		e.Ms(proc.Start)
		e.Raw(`,"end":`)
		e.Ms(proc.End)
		e.Raw(`,"exitCode":`)
		e.Int(int64(proc.ExitCode))
		if proc.Exec {
			e.Raw(`,"exec":true`)
		}
		e.Byte('}')
	}
}

// counters writes a process's counters; the front-end draws them as
// tracks of the process whose thread is GeckoMain.
// An OS process that exec'd is several Gecko process objects, one per
// image, and only the one holding the process track has a GeckoMain
// thread; the front-end drops the counters of the others. So an earlier
// image's counters are written with the image that holds the track,
// tagged "gprofImage" with their own image's index, which gprof's reader
// uses to give them back.

// trackImage returns the image of proc's OS process that holds its
// track, or nil when proc is alone or no image has a main thread.
func (w *profileWriter) trackImage(proc *profile.Process) *profile.Process {
	o := w.ids.Process(proc)
	if o == nil || o.Main == nil || len(o.Images) < 2 {
		return nil
	}
	for _, im := range o.Images {
		if slices.Contains(im.Threads, o.Main) {
			return im
		}
	}
	return nil
}

// movedFrom reports whether proc's counters are written with another image.
func (w *profileWriter) movedFrom(proc *profile.Process) bool {
	h := w.trackImage(proc)
	return h != nil && h != proc
}

// imageCounters are an earlier image's counters and its index.
type imageCounters struct {
	image    int
	counters []profile.Counter
}

// movedTo returns the earlier images' counters written with proc.
func (w *profileWriter) movedTo(proc *profile.Process) []imageCounters {
	if w.trackImage(proc) != proc {
		return nil
	}
	var out []imageCounters
	o := w.ids.Process(proc)
	for i, im := range o.Images {
		if im != proc && len(im.Counters) > 0 {
			out = append(out, imageCounters{i, im.Counters})
		}
	}
	return out
}

func (w *profileWriter) counters(cs []profile.Counter, moved []imageCounters, base int64) {
	e := w.e
	e.Raw(`,"counters":[`)
	n := 0
	for i := range cs {
		if n > 0 {
			e.Byte(',')
		}
		n++
		w.counter(&cs[i], -1, base)
	}
	for _, m := range moved {
		for i := range m.counters {
			if n > 0 {
				e.Byte(',')
			}
			n++
			w.counter(&m.counters[i], m.image, base)
		}
	}
	e.Byte(']')
}

// counter writes one counter; image >= 0 tags one moved from that image.
func (w *profileWriter) counter(c *profile.Counter, image int, base int64) {
	e := w.e
	{
		e.Raw(`{"name":`)
		e.JSString(c.Name)
		e.Raw(`,"category":`)
		e.JSString(c.Category)
		e.Raw(`,"description":`)
		e.JSString(c.Description)
		e.Raw(`,"samples":{"schema":{"time":0,"count":1,"number":2},"data":[`)
		for j, t := range c.Time {
			if j > 0 {
				e.Byte(',')
			}
			e.Byte('[')
			e.Ms(t - base)
			e.Byte(',')
			e.Int(c.Count[j])
			e.Raw(",0]")
		}
		e.Raw("]}")
		if image >= 0 {
			e.Raw(`,"gprofImage":`)
			e.Int(int64(image))
		}
		e.Byte('}')
	}
}

// overhead writes gprof's own cost as the Gecko profilerOverhead: times
// in µs, durations in ns, statistics in µs.
func (w *profileWriter) overhead(o *profile.Overhead) {
	st, ok := o.Stats()
	if !ok {
		return
	}
	e := w.e
	e.Raw(`,"profilerOverhead":{"samples":{"schema":{"time":0,"locking":1,"expiredMarkerCleaning":2,"counters":3,"threads":4},"data":[`)
	for i, t := range o.Time {
		if i > 0 {
			e.Byte(',')
		}
		e.Byte('[')
		e.Fixed(t, 3)
		e.Raw(",0,0,")
		e.Int(o.Counters[i])
		e.Byte(',')
		e.Int(o.Threads[i])
		e.Byte(']')
	}
	e.Raw(`]},"statistics":`)
	w.json(st.JSON())
	e.Byte('}')
}

func (w *profileWriter) lib(l *profile.Lib) {
	e := w.e
	e.Raw(`{"start":`)
	e.Uint(l.Start)
	e.Raw(`,"end":`)
	e.Uint(l.End)
	e.Raw(`,"offset":`)
	e.Uint(l.Offset)
	e.Raw(`,"name":`)
	e.JSString(l.Name)
	e.Raw(`,"path":`)
	e.JSString(l.Path)
	e.Raw(`,"debugName":`)
	e.JSString(l.DebugName)
	e.Raw(`,"debugPath":`)
	e.JSString(l.DebugPath)
	e.Raw(`,"breakpadId":`)
	e.JSString(l.BreakpadID)
	// codeId is optional; an empty one would reach symbol servers as "".
	if l.CodeID != "" {
		e.Raw(`,"codeId":`)
		e.JSString(l.CodeID)
	}
	e.Raw(`,"arch":`)
	e.JSString(l.Arch)
	e.Byte('}')
}

func (w *profileWriter) intern(s string) int32 { return w.strs.Index(s) }

// eventIndex says which of a process's threads (owner) a thread object
// holds the samples of which of its events (event); -1 for the thread's
// own samples.
type eventIndex struct{ owner, event int }

// thread writes th, or with ev >= 0 one of its event tables as a thread
// of its own: named "NAME [EVENT]", with a tid of its own ("TID.EVENT",
// a string), the samples of the event and no markers, and th's frames
// and stacks. "gprofEvent" and "gprofEventOf" (the owner's index among
// the process's threads) let Read fold it back into th.
func (w *profileWriter) thread(proc *profile.Process, th *profile.Thread, base int64, ev eventIndex) {
	e := w.e
	w.strs.Reset()

	// Only the thread that holds its OS process's track is called
	// GeckoMain, which the front-end labels with processName.
	o := w.ids.Process(proc)
	name, tid := w.ids.ThreadName(proc, th), w.ids.Tid(th)
	samples := &th.Samples
	if ev.owner >= 0 {
		es := &th.Events[ev.event]
		name, tid = lifecycle.EventThreadName(th.Name, proc.Name, es.Event), tid+"."+es.Event
		samples = &es.Samples
	}
	e.Raw(`{"name":`)
	e.JSString(name)
	e.Raw(`,"processType":"default","processName":`)
	e.JSString(o.Name)
	e.Raw(`,"tid":`)
	w.id(tid)
	e.Raw(`,"pid":`)
	w.id(o.Pid)
	e.Raw(`,"registerTime":`)
	e.Ms(th.Start - base)
	e.Raw(`,"unregisterTime":`)
	if th.End >= 0 {
		e.Ms(th.End - base)
	} else {
		e.Raw("null")
	}
	e.Raw(`,"gprofName":`)
	e.JSString(th.Name)
	e.Raw(`,"gprofMain":`)
	e.Bool(th.Main && ev.owner < 0)
	if ev.owner >= 0 {
		e.Raw(`,"gprofEvent":`)
		e.JSString(th.Events[ev.event].Event)
		e.Raw(`,"gprofEventOf":`)
		e.Int(int64(ev.owner))
	}

	w.samples(samples, base)
	if ev.owner >= 0 {
		e.Raw(`,"markers":{"schema":{"name":0,"startTime":1,"endTime":2,"phase":3,"category":4,"data":5},"data":[]}`)
	} else {
		w.markers(proc, th, base)
	}
	w.frames(&th.Frames)

	e.Raw(`,"stackTable":{"schema":{"prefix":0,"frame":1},"data":[`)
	st := &th.Stacks
	for i := range st.Frame {
		if i > 0 {
			e.Byte(',')
		}
		e.Byte('[')
		if st.Prefix[i] == profile.NoStack {
			e.Raw("null")
		} else {
			e.Int(int64(st.Prefix[i]))
		}
		e.Byte(',')
		e.Int(int64(st.Frame[i]))
		e.Byte(']')
	}
	e.Raw(`]},"stringTable":[`)
	for i, s := range w.strs.List() {
		if i > 0 {
			e.Byte(',')
		}
		e.JSString(s)
	}
	e.Raw("]}")
}

func (w *profileWriter) samples(s *profile.SampleTable, base int64) {
	e := w.e
	e.Raw(`,"samples":{"schema":{"stack":0,"time":1,"eventDelay":2,"threadCPUDelta":3`)
	// The front-end does not read a weight column; gprof's reader does.
	if s.Weight != nil {
		e.Raw(`,"weight":4`)
	}
	e.Raw(`},"data":[`)
	b := e.Scratch()
	for i, stack := range s.Stack {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		if stack == profile.NoStack {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendInt(b, int64(stack), 10)
		}
		b = append(b, ',')
		b = jsonw.AppendFixed(b, s.Time[i]-base, 6)
		b = append(b, ",0,"...)
		if s.CPUDelta == nil || s.CPUDelta[i] < 0 {
			b = append(b, "null"...)
		} else {
			b = jsonw.AppendFixed(b, s.CPUDelta[i], 3) // ns to µs
		}
		if s.Weight != nil {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(s.Weight[i]), 10)
		}
		b = append(b, ']')
		if len(b) > 32<<10 {
			e.Bytes(b)
			b = b[:0]
		}
	}
	e.Bytes(b)
	e.Keep(b)
	e.Raw("]}")
}

func (w *profileWriter) frames(ft *profile.FrameTable) {
	e := w.e
	e.Raw(`,"frameTable":{"schema":{"location":0,"relevantForJS":1,"innerWindowID":2,"implementation":3,"line":4,"column":5,"category":6,"subcategory":7},"data":[`)
	var loc []byte
	for i := range ft.Frames {
		f := &ft.Frames[i]
		var s int32
		if f.File != "" {
			// The front-end's form for a script's function: it takes
			// the name, file and line apart (its JS functions).
			s = w.intern(LangLocation(f))
		} else if f.Label != "" {
			s = w.intern(f.Label)
		} else {
			// Raw addresses: the front-end itself moves return addresses
			// back into the call instruction.
			loc = strconv.AppendUint(append(loc[:0], "0x"...), f.Address, 16)
			s = w.intern(string(loc))
		}
		if i > 0 {
			e.Byte(',')
		}
		e.Byte('[')
		e.Int(int64(s))
		if f.Line > 0 {
			e.Raw(",false,null,null,")
			e.Int(int64(f.Line))
			e.Raw(",null,")
		} else {
			e.Raw(",false,null,null,null,null,")
		}
		e.Int(int64(f.Category))
		e.Raw(",0]")
	}
	e.Raw("]}")
}

// id writes a pid or tid from profile.TrackIDs: a number when it is one,
// else a string ("1234.1"), which the front-end takes as is.
func (w *profileWriter) id(s string) {
	if profile.IsNumber(s) {
		w.e.Raw(s)
	} else {
		w.e.JSString(s)
	}
}

func (w *profileWriter) markers(proc *profile.Process, th *profile.Thread, base int64) {
	e := w.e
	e.Raw(`,"markers":{"schema":{"name":0,"startTime":1,"endTime":2,"phase":3,"category":4,"data":5},"data":[`)
	n := 0
	sep := func() {
		if n > 0 {
			e.Byte(',')
		}
		n++
	}
	for _, m := range append(lifecycle.Markers(w.ids, proc, th), th.Markers...) {
		sep()
		e.Byte('[')
		e.Int(int64(w.intern(m.Name)))
		e.Byte(',')
		if m.Phase == profile.PhaseIntervalEnd {
			e.Raw("null")
		} else {
			e.Ms(m.Start - base)
		}
		e.Byte(',')
		if m.Phase == profile.PhaseInterval || m.Phase == profile.PhaseIntervalEnd {
			e.Ms(m.End - base)
		} else {
			e.Raw("null")
		}
		e.Byte(',')
		e.Int(int64(m.Phase))
		e.Byte(',')
		e.Int(int64(m.Category))
		e.Byte(',')
		switch {
		case m.Cause > 0 && int(m.Cause) <= th.Stacks.Len():
			w.causeData(&m, proc, th, base)
		case m.Data == nil:
			e.Raw("null")
		default:
			w.json(m.Data)
		}
		e.Byte(']')
		if e.Err() != nil {
			return
		}
	}
	e.Raw("]}")
}

// causeData writes the payload of a marker with a cause: its data and a
// "stack", a one-sample thread whose sample is the cause's stack, which
// is how the Gecko format carries a marker's stack (the front-end makes
// it the marker's cause).
func (w *profileWriter) causeData(m *profile.Marker, proc *profile.Process, th *profile.Thread, base int64) {
	e := w.e
	data, err := json.Marshal(m.Data)
	if err != nil || len(data) < 2 || data[0] != '{' {
		data = []byte("{}")
	}
	e.Bytes(data[:len(data)-1])
	if len(data) > 2 {
		e.Byte(',')
	}
	e.Raw(`"stack":{"name":"SyncProfile","registerTime":null,"unregisterTime":null,"processType":"default","tid":`)
	w.id(w.ids.Tid(th))
	e.Raw(`,"pid":`)
	w.id(w.ids.Process(proc).Pid)
	e.Raw(`,"markers":{"schema":{"name":0,"startTime":1,"endTime":2,"phase":3,"category":4,"data":5},"data":[]},"samples":{"schema":{"stack":0,"time":1,"eventDelay":2},"data":[[`)
	e.Int(int64(m.Cause - 1))
	e.Byte(',')
	e.Ms(m.Start - base)
	e.Raw(`,0]]}}}`)
}

var errNoProfile = errors.New("gecko: nil profile")

// LangLocation is a script frame's location string as the Firefox
// Profiler reads one: "name (file:line)", the line being where the
// function starts (or, not knowing it, the frame's line).
func LangLocation(f *profile.Frame) string {
	line := f.FuncLine
	if line <= 0 {
		line = max(f.Line, 0)
	}
	return f.Label + " (" + f.File + ":" + strconv.Itoa(int(line)) + ")"
}

// pausedRanges writes the stretches with sampling off. Every process
// object gets them, in the main process's time: the front-end gives a
// process's ranges to its threads without moving them to its startTime.
func (w *profileWriter) pausedRanges() {
	e := w.e
	e.Raw(`,"pausedRanges":[`)
	for i, r := range w.p.Meta.PausedRanges {
		if i > 0 {
			e.Byte(',')
		}
		e.Raw(`{"startTime":`)
		e.Ms(r.Start)
		e.Raw(`,"endTime":`)
		if r.End < 0 {
			e.Raw("null")
		} else {
			e.Ms(r.End)
		}
		e.Raw(`,"reason":`)
		e.JSString(cmp.Or(r.Reason, profile.PausedByProfiler))
		e.Byte('}')
	}
	e.Byte(']')
}
