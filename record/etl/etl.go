// Package etl reads Event Trace Log files (.etl), as xperf, WPR and
// PerfView write them, on any OS and in pure Go, the way record/perfdata
// reads perf.data files: package etw walks the file's buffers and decodes
// the events, the live ETW backend's translation (etw/translate) turns
// them into the neutral events, and the recorder's builder
// (record.Replay) makes the profile. What only a file has is done around
// them: the logfile header's clock and system, the trace's volume names
// for paths, the identity events joined to their images, and the CLR's
// method events naming JIT-compiled code. Linked in, it registers itself
// with package format, which then reads ETL files.
package etl

import (
	"bufio"
	"cmp"
	"errors"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/gprof-dev/gprof/etwevent"
	"github.com/gprof-dev/gprof/etwevent/translate"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/format"
	"github.com/gprof-dev/gprof/objfile"
	"github.com/gprof-dev/gprof/profile"
	"github.com/gprof-dev/gprof/record"
)

// Kind is how package format names ETL files.
const Kind format.Kind = "etl"

// ETL files are read by package format once this package is linked in.
func init() {
	format.Register(format.Importer{
		Kind:  Kind,
		Name:  "ETL",
		Sniff: Sniff,
		Read: func(r io.Reader, _ format.FileInfo) (*profile.Profile, error) {
			return Read(r)
		},
	})
}

// Sniff reports whether head, the start of a file, is an ETL file.
func Sniff(head []byte) bool { return etwevent.SniffETL(head) }

// Read reads an ETL file and builds the profile of every process it
// holds. Stacks keep their kernel frames; names are left to
// symbolication.
func Read(r io.Reader) (*profile.Profile, error) { return read(r, nil) }

// kept is an event kept for translation, with what the file says about
// it beyond its payload.
type kept struct {
	e   etwevent.Event // its payload copied
	cpu int
	seq int      // file order, to keep it among events of the same time
	ids *imageID // an image event's identity events
}

// trace is what reading the file gathered besides the events.
type trace struct {
	header     etwevent.LogHeader
	haveHeader bool
	events     []kept
	minTime    int64
	maxTime    int64
	haveTime   bool
	interval   int64 // 100 ns units
	samples    int   // SampledProfile events
	volumes    [][2]string
	methods    map[int64][]method
	ids        identities
}

// read reads the file; edit, when set, sees (and may change, or drop)
// every event as it is read, for tests that make a trace of another shape.
func read(r io.Reader, edit func(*etwevent.Event) bool) (*profile.Profile, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	head, _ := br.Peek(etwevent.ETLSniffSize)
	if !Sniff(head) {
		return nil, errors.New("not an ETL file: no WMI buffer header with a logfile header")
	}
	tr := &trace{methods: map[int64][]method{}}
	tr.ids.init()
	if err := etwevent.WalkETL(br, func(e *etwevent.Event, cpu, buf int) {
		if edit == nil || edit(e) {
			tr.add(e, cpu, buf)
		}
	}); err != nil {
		return nil, err
	}
	if !tr.haveHeader {
		return nil, errors.New("ETL file has no logfile header")
	}
	p := tr.profile()
	const how = "record it with the kernel provider's PROC_THREAD, LOADER and PROFILE flags (xperf -on PROC_THREAD+LOADER+PROFILE -stackwalk Profile, or WPR's CPU profile)"
	switch {
	case tr.samples == 0:
		return nil, errors.New("the ETL trace has no CPU samples (kernel PerfInfo SampledProfile events): " + how)
	case len(p.Processes) == 0:
		return nil, errors.New("the ETL trace has CPU samples but no kernel thread events to tell whose they are: " + how)
	}
	return p, nil
}

// add takes one event of the file, in file order.
func (tr *trace) add(e *etwevent.Event, cpu, buf int) {
	tr.ids.buffer(buf)
	kind := etwevent.KindOf(e)
	switch kind {
	case etwevent.KindHeader:
		if !tr.haveHeader {
			if h, err := etwevent.ParseLogHeader(e); err == nil {
				tr.header, tr.haveHeader = h, true
			}
		}
		return
	case etwevent.KindOther:
		return
	}
	if e.Time > 0 {
		if !tr.haveTime || e.Time < tr.minTime {
			tr.minTime = e.Time
		}
		if !tr.haveTime || e.Time > tr.maxTime {
			tr.maxTime = e.Time
		}
		tr.haveTime = true
	}
	var ids *imageID
	switch kind {
	case etwevent.KindSample:
		tr.samples++
	case etwevent.KindSampleInterval:
		if iv, ok := etwevent.DecodeSampleInterval(e.Payload); ok {
			tr.interval = int64(iv)
		}
		return
	case etwevent.KindImageID, etwevent.KindDbgIDRSDS:
		tr.ids.event(e)
		return
	case etwevent.KindImageLoad, etwevent.KindImageRundown, etwevent.KindImageUnload:
		ids = tr.ids.image(e)
	case etwevent.KindVolumeMapping:
		if nt, dos, ok := etwevent.DecodeVolumeMapping(e.Payload); ok && len(dos) >= 2 && dos[1] == ':' {
			tr.volumes = append(tr.volumes, [2]string{nt, dos})
		}
		return
	case etwevent.KindCLRMethodLoad, etwevent.KindCLRMethodUnload:
		m, ok := etwevent.DecodeMethodLoad(e.Payload)
		if ok && kind == etwevent.KindCLRMethodLoad && m.Size > 0 {
			tr.methods[e.PID] = append(tr.methods[e.PID], method{m.Start, m.Start + uint64(m.Size), m.FullName()})
		}
		return
	}
	ev := *e
	ev.Payload = slices.Clone(e.Payload)
	ev.Stack = nil
	tr.events = append(tr.events, kept{e: ev, cpu: cpu, seq: len(tr.events), ids: ids})
}

// profile replays the events through the translator and the builder.
func (tr *trace) profile() *profile.Profile {
	h := &tr.header
	freq := h.TicksPerSecond()
	zero := tr.minTime
	if !tr.haveTime || h.HeaderTime > 0 && h.HeaderTime < zero {
		zero = h.HeaderTime
	}
	ns := func(t int64) int64 { return int64(float64(t-zero) * 1e9 / float64(freq)) }
	start := time.Unix(0, (h.StartFileTime-116444736000000000)*100)
	if h.StartFileTime > 0 && h.HeaderTime > 0 {
		start = start.Add(time.Duration(ns(zero) - ns(h.HeaderTime)))
	}
	interval := time.Millisecond
	if tr.interval > 0 {
		interval = time.Duration(tr.interval * 100)
	}
	arch := "x86_64"
	if h.PointerSize == 4 {
		arch = "x86"
	}
	meta := profile.Meta{
		Product:     "gprof",
		StartTime:   start,
		Interval:    interval,
		OSCPU:       "Windows " + strconv.Itoa(h.Major) + "." + strconv.Itoa(h.Minor) + "." + strconv.Itoa(h.Build),
		Platform:    "Windows",
		Arch:        arch,
		LogicalCPUs: h.CPUs,
		Extra:       map[string]string{"source": "ETL file"},
	}

	tr.ids.joinLoose()
	// Buffers of different CPUs interleave: file order is not time
	// order. seq keeps file order among events of the same time.
	slices.SortFunc(tr.events, func(x, y kept) int { return cmp.Or(cmp.Compare(x.e.Time, y.e.Time), cmp.Compare(x.seq, y.seq)) })

	var out []event.Event
	if n := h.EventsLost + h.BuffersLost; n > 0 {
		out = append(out, &event.Lost{Count: n})
	}
	var cur *kept
	disk := diskIdentities{}
	t := translate.New(func(ev event.Event) { out = append(out, clone(ev)) }, translate.Options{
		AllProcesses: true,
		KeepTids:     true,
		ToNS:         ns,
		Start:        zero,
		Interval:     int64(interval),
		Kernel:       true,
		Path:         func(p string) string { return dosPath(p, tr.volumes) },
		Identify: func(im *etwevent.Image, path string) *objfile.Identity {
			return identify(im, path, cur.ids, disk)
		},
	})
	for i := range tr.events {
		cur = &tr.events[i]
		t.Event(&cur.e, cur.cpu)
	}
	cur, tr.events = nil, nil
	t.Flush()
	// The translator sends a sample when its stack is whole, which for
	// cached stacks is at the end: the builder wants time order.
	slices.SortStableFunc(out, func(x, y event.Event) int { return cmp.Compare(event.EventTime(x), event.EventTime(y)) })

	jit := newMethods(tr.methods)
	p := record.Replay(out, record.ReplayOptions{
		Meta:  meta,
		Start: 0,
		End:   ns(tr.maxTime),
		Label: jit.lookup,
	})
	for _, pr := range p.Processes {
		markMain(pr)
	}
	return p
}

// clone copies what the builder keeps of an event: the translator may
// reuse a sample's stack.
func clone(ev event.Event) event.Event {
	switch e := ev.(type) {
	case *event.Sample:
		c := *e
		c.Stack = slices.Clone(e.Stack)
		return &c
	case *event.Map:
		c := *e
		return &c
	case *event.Unmap:
		c := *e
		return &c
	case *event.Comm:
		c := *e
		return &c
	case *event.Fork:
		c := *e
		return &c
	case *event.Exit:
		c := *e
		return &c
	case *event.Lost:
		c := *e
		return &c
	}
	return ev
}

// markMain marks a process's first thread its main thread: Windows has no
// thread whose id is the process's, the mark attach's events use.
func markMain(pr *profile.Process) {
	for _, th := range pr.Threads {
		if th.Main {
			return
		}
	}
	if len(pr.Threads) > 0 {
		pr.Threads[0].Main = true
	}
}
