package etl

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gprof-dev/gprof/etw"
	"github.com/gprof-dev/gprof/profile"
)

// record is one event kept until the end of the trace, when all of them
// are replayed in time order: buffers of different CPUs interleave, so
// file order is not time order.
type record struct {
	time int64
	seq  int32
	kind etw.Kind
	tid  uint32 // a sample's thread
	ip   uint64 // a sample's instruction pointer
	ev   *event // what other events say; nil for samples, which are most
}

// event is what a process, thread or image event says.
type event struct {
	proc etw.Process
	thr  etw.Thread
	name string
	img  *image
}

// image is an Image event joined with the identity events before it.
type image struct {
	etw.Image
	id   *etw.ImageID
	rsds *etw.RSDS
}

type stackKey struct {
	tid  uint32
	time int64
}

// fragment is part of a sample's stack: frames, or a cached stack's key.
type fragment struct {
	frames  []uint64
	key     uint64
	keyed   bool
	refTime int64
}

type keyDef struct {
	time   int64
	frames []uint64
}

type method struct {
	start, end uint64
	name       string
}

type builder struct {
	haveHeader bool
	hdr        etw.LogHeader
	recs       []record
	minTime    int64
	maxTime    int64
	haveTime   bool
	interval   int64  // 100 ns units
	samples    int    // SampledProfile events
	lost       uint64 // lost-event reports
	frags      map[stackKey][]fragment
	defs       map[uint64][]keyDef
	methods    map[int64][]method
	volumes    [][2]string // NT path prefix, drive path
	onDisk     map[string]*etw.PEIdentity
	// Every identity event by image, and the images that had none right
	// before them, for a trace that does not keep them together.
	ids      map[imageKey][]timedID
	unjoined []timedImage
	joined   map[*etw.RSDS]bool // RSDS events joined to the image after them
	// The identity events of the buffer being read, waiting for their
	// Image event.
	curBuf      int
	pendingID   *etw.ImageID
	pendingRSDS *etw.RSDS
	pendingTime int64
}

func newBuilder() *builder {
	return &builder{
		frags:   map[stackKey][]fragment{},
		defs:    map[uint64][]keyDef{},
		methods: map[int64][]method{},
		ids:     map[imageKey][]timedID{},
		joined:  map[*etw.RSDS]bool{},
	}
}

type imageKey struct {
	pid  uint32
	base uint64
}

type timedID struct {
	time int64
	id   *etw.ImageID
	rsds *etw.RSDS
}

type timedImage struct {
	time int64
	img  *image
}

// joinLoose gives the images that had no identity events right before
// them those of the same process and base nearest in time, that no other
// image took.
func (b *builder) joinLoose() {
	for _, u := range b.unjoined {
		var bestID, bestRSDS *timedID
		dist := func(t *timedID) int64 { return max(t.time-u.time, u.time-t.time) }
		cands := b.ids[imageKey{u.img.PID, u.img.Base}]
		for i := range cands {
			c := &cands[i]
			if c.id != nil && (bestID == nil || dist(c) < dist(bestID)) {
				bestID = c
			}
			if c.rsds != nil && !b.joined[c.rsds] && (bestRSDS == nil || dist(c) < dist(bestRSDS)) {
				bestRSDS = c
			}
		}
		// The ImageID's size is the PE's SizeOfImage, which a driver's
		// small section alignment leaves short of the pages mapped.
		pages := func(n uint64) uint64 { return (n + 0xfff) &^ 0xfff }
		if u.img.id == nil && bestID != nil && (bestID.id.Size == 0 || pages(bestID.id.Size) == pages(u.img.Size)) {
			u.img.id = bestID.id
		}
		if u.img.rsds == nil && bestRSDS != nil {
			u.img.rsds = bestRSDS.rsds
		}
	}
}

func (b *builder) event(e *etw.Event, cpu, buf int) {
	if buf != b.curBuf {
		b.curBuf = buf
		b.pendingID, b.pendingRSDS = nil, nil
	}
	kind := etw.KindOf(e)
	if kind == etw.KindHeader {
		if !b.haveHeader {
			if h, err := etw.ParseLogHeader(e); err == nil {
				b.hdr, b.haveHeader = h, true
			}
		}
		return
	}
	if kind == etw.KindOther {
		return
	}
	if e.Time > 0 {
		if !b.haveTime || e.Time < b.minTime {
			b.minTime = e.Time
		}
		if !b.haveTime || e.Time > b.maxTime {
			b.maxTime = e.Time
		}
		b.haveTime = true
	}
	rec := record{time: e.Time, seq: int32(len(b.recs)), kind: kind}
	if kind != etw.KindSample {
		rec.ev = &event{}
	}
	switch kind {
	case etw.KindSample:
		s, ok := etw.DecodeSample(e.Payload, e.Ptr64)
		if !ok {
			return
		}
		rec.tid, rec.ip = s.TID, s.IP
		b.samples++
	case etw.KindSampleInterval:
		if iv, ok := etw.DecodeSampleInterval(e.Payload); ok {
			b.interval = int64(iv)
		}
		return
	case etw.KindStack:
		s, ok := etw.DecodeStack(e.Payload, e.Ptr64)
		if ok && len(s.Frames) > 0 {
			k := stackKey{s.TID, s.SampleTime}
			b.frags[k] = append(b.frags[k], fragment{frames: s.Frames})
		}
		return
	case etw.KindStackKeyKernel, etw.KindStackKeyUser:
		s, ok := etw.DecodeStackKeyRef(e.Payload, e.Ptr64)
		if ok {
			k := stackKey{s.TID, s.SampleTime}
			b.frags[k] = append(b.frags[k], fragment{key: s.Key, keyed: true, refTime: e.Time})
		}
		return
	case etw.KindStackKeyDef:
		key, fr, ok := etw.DecodeStackKeyDef(e.Payload, e.Ptr64)
		if ok {
			b.defs[key] = append(b.defs[key], keyDef{time: e.Time, frames: fr})
		}
		return
	case etw.KindProcessStart, etw.KindProcessEnd, etw.KindProcessRundown:
		p, ok := etw.DecodeProcess(e.Payload, e.Ptr64, e.Version)
		if !ok {
			return
		}
		rec.ev.proc = p
		if e.Classic() && e.Type() == 4 || !e.Classic() && e.Opcode == 4 {
			rec.ev.name = "dcend"
		}
	case etw.KindThreadStart, etw.KindThreadEnd, etw.KindThreadRundown:
		t, ok := etw.DecodeThread(e.Payload, e.Ptr64, e.Version)
		if !ok {
			return
		}
		rec.ev.thr = t
	case etw.KindThreadName:
		t, name, ok := etw.DecodeThreadName(e.Payload)
		if !ok {
			return
		}
		rec.ev.thr, rec.ev.name = t, name
	case etw.KindImageID:
		if id, ok := etw.DecodeImageID(e.Payload, e.Ptr64); ok {
			b.pendingID, b.pendingTime = &id, e.Time
			k := imageKey{id.PID, id.Base}
			b.ids[k] = append(b.ids[k], timedID{e.Time, &id, nil})
		}
		return
	case etw.KindDbgIDRSDS:
		if d, ok := etw.DecodeRSDS(e.Payload, e.Ptr64); ok {
			b.pendingRSDS, b.pendingTime = &d, e.Time
			k := imageKey{d.PID, d.Base}
			b.ids[k] = append(b.ids[k], timedID{e.Time, nil, &d})
		}
		return
	case etw.KindImageLoad, etw.KindImageRundown, etw.KindImageUnload:
		im, ok := etw.DecodeImage(e.Payload, e.Ptr64)
		if !ok {
			return
		}
		img := &image{Image: im}
		// The identity events come right before their image, with its
		// timestamp; bases are reused, so join on that, not on the base.
		if b.pendingTime == e.Time {
			if b.pendingID != nil && b.pendingID.Base == im.Base {
				img.id = b.pendingID
			}
			if b.pendingRSDS != nil && b.pendingRSDS.Base == im.Base {
				img.rsds = b.pendingRSDS
				b.joined[img.rsds] = true
			}
		}
		b.pendingID, b.pendingRSDS = nil, nil
		if img.id == nil || img.rsds == nil {
			b.unjoined = append(b.unjoined, timedImage{e.Time, img})
		}
		rec.ev.img = img
	case etw.KindLost:
		b.lost++
		return
	case etw.KindVolumeMapping:
		if nt, dos, ok := etw.DecodeVolumeMapping(e.Payload); ok && len(dos) >= 2 && dos[1] == ':' {
			b.volumes = append(b.volumes, [2]string{nt, dos})
		}
		return
	case etw.KindCLRMethodLoad, etw.KindCLRMethodUnload:
		m, ok := etw.DecodeMethodLoad(e.Payload)
		if ok && kind == etw.KindCLRMethodLoad && m.Size > 0 {
			b.methods[e.PID] = append(b.methods[e.PID], method{m.Start, m.Start + uint64(m.Size), m.FullName()})
		}
		return
	}
	b.recs = append(b.recs, rec)
}

// pending is a sample whose stack is assembled at the end of the trace.
type pending struct {
	th   *profile.Thread
	proc *profile.Process
	time int64 // ns since the profile's start
	raw  int64 // the trace's timestamp, which stack events refer to
	ip   uint64
	tid  uint32
}

type procState struct {
	p        *profile.Process
	ended    bool
	threads  map[uint32]*profile.Thread
	samples  int
	loadedAt map[uint64]int // lib base -> samples count when loaded
}

func (b *builder) profile() *profile.Profile {
	h := &b.hdr
	freq := h.TicksPerSecond()
	zero := b.minTime
	if !b.haveTime || h.HeaderTime > 0 && h.HeaderTime < zero {
		zero = h.HeaderTime
	}
	ns := func(t int64) int64 { return int64(float64(t-zero) * 1e9 / float64(freq)) }
	start := time.Unix(0, (h.StartFileTime-116444736000000000)*100)
	if h.StartFileTime > 0 && h.HeaderTime > 0 {
		start = start.Add(time.Duration(ns(zero) - ns(h.HeaderTime)))
	}
	interval := time.Millisecond
	if b.interval > 0 {
		interval = time.Duration(b.interval * 100)
	}
	arch := "x86_64"
	if h.PointerSize == 4 {
		arch = "x86"
	}
	prof := &profile.Profile{Meta: profile.Meta{
		Product:     "gprof",
		StartTime:   start,
		Interval:    interval,
		OSCPU:       "Windows " + strconv.Itoa(h.Major) + "." + strconv.Itoa(h.Minor) + "." + strconv.Itoa(h.Build),
		Platform:    "Windows",
		Arch:        arch,
		LogicalCPUs: h.CPUs,
		Duration:    ns(b.maxTime),
		LostEvents:  h.EventsLost + h.BuffersLost + b.lost,
		Extra:       map[string]string{"source": "ETL file"},
	}}

	b.joinLoose()
	// seq makes the order total, so an unstable sort keeps file order
	// among equal times.
	slices.SortFunc(b.recs, func(x, y record) int { return cmp.Or(cmp.Compare(x.time, y.time), cmp.Compare(x.seq, y.seq)) })
	var procs []*procState
	byPid := map[uint32]*procState{}
	tids := map[uint32]*procState{} // which process a tid belongs to now
	var kernelLibs []profile.Lib
	var samples []pending

	getProc := func(pid uint32, name string, t int64) *procState {
		ps := byPid[pid]
		if ps == nil || ps.ended {
			ps = &procState{p: &profile.Process{Pid: int(pid), Name: name, Start: t, End: -1, ExitCode: -1},
				threads: map[uint32]*profile.Thread{}, loadedAt: map[uint64]int{}}
			byPid[pid] = ps
			procs = append(procs, ps)
		}
		if ps.p.Name == "" {
			ps.p.Name = name
		}
		return ps
	}
	getThread := func(ps *procState, tid uint32, t int64) *profile.Thread {
		th := ps.threads[tid]
		if th == nil || th.End >= 0 {
			th = &profile.Thread{Tid: int(tid), Start: t, End: -1, Main: len(ps.p.Threads) == 0}
			ps.threads[tid] = th
			ps.p.Threads = append(ps.p.Threads, th)
		}
		tids[tid] = ps
		return th
	}
	// Which process each tid belongs to, by the rundown and end events
	// that say so, in time order.
	owners := map[uint32][]owner{}
	for i := range b.recs {
		if r := &b.recs[i]; r.kind == etw.KindThreadRundown || r.kind == etw.KindThreadEnd {
			owners[r.ev.thr.TID] = append(owners[r.ev.thr.TID], owner{r.time, r.ev.thr.PID})
		}
	}
	for i := range b.recs {
		r := &b.recs[i]
		t := max(ns(r.time), 0)
		switch r.kind {
		case etw.KindProcessStart, etw.KindProcessRundown:
			if ps := byPid[r.ev.proc.PID]; r.ev.name == "dcend" && ps != nil {
				if ps.p.Name == "" {
					ps.p.Name = r.ev.proc.ImageName
				}
				break
			}
			st := t
			if r.kind == etw.KindProcessRundown {
				st = 0
			}
			getProc(r.ev.proc.PID, r.ev.proc.ImageName, st)
		case etw.KindProcessEnd:
			ps := getProc(r.ev.proc.PID, r.ev.proc.ImageName, t)
			ps.p.End, ps.p.ExitCode, ps.ended = t, int(r.ev.proc.ExitStatus), true
		case etw.KindThreadStart, etw.KindThreadRundown:
			ps := byPid[r.ev.thr.PID]
			if ps == nil {
				ps = getProc(r.ev.thr.PID, "", 0)
			}
			if th := ps.threads[r.ev.thr.TID]; th != nil && th.End < 0 {
				tids[r.ev.thr.TID] = ps
				if r.ev.thr.Name != "" {
					th.Name = r.ev.thr.Name
				}
				break
			}
			st := t
			if r.kind == etw.KindThreadRundown {
				st = 0
			}
			if th := getThread(ps, r.ev.thr.TID, st); r.ev.thr.Name != "" {
				th.Name = r.ev.thr.Name
			}
		case etw.KindThreadEnd:
			if ps := byPid[r.ev.thr.PID]; ps != nil {
				if th := ps.threads[r.ev.thr.TID]; th != nil && th.End < 0 {
					th.End = t
				}
			}
		case etw.KindThreadName:
			if ps := byPid[r.ev.thr.PID]; ps != nil {
				if th := ps.threads[r.ev.thr.TID]; th != nil {
					th.Name = r.ev.name
				}
			}
		case etw.KindImageLoad, etw.KindImageRundown:
			lib := makeLib(r.ev.img, b.volumes)
			if lib.BreakpadID == "" {
				b.identityFromDisk(&lib, r.ev.img)
			}
			if r.ev.img.PID == 0 {
				kernelLibs = append(kernelLibs, lib)
				break
			}
			ps := byPid[r.ev.img.PID]
			if ps == nil {
				ps = getProc(r.ev.img.PID, "", 0)
			}
			ps.p.Libs = append(ps.p.Libs, lib)
			ps.loadedAt[lib.Start] = ps.samples
			if ps.p.Name == "" && strings.HasSuffix(strings.ToLower(lib.Name), ".exe") {
				ps.p.Name = lib.Name
			}
		case etw.KindImageUnload:
			// A module unloaded before any sample of its process landed
			// (often a DLL mapped as data) would hide the one loaded
			// at its base later; drop it.
			ps := byPid[r.ev.img.PID]
			if ps == nil {
				break
			}
			if n, ok := ps.loadedAt[r.ev.img.Base]; ok && n == ps.samples {
				ps.p.Libs = slices.DeleteFunc(ps.p.Libs, func(l profile.Lib) bool { return l.Start == r.ev.img.Base })
				delete(ps.loadedAt, r.ev.img.Base)
			}
		case etw.KindSample:
			ps := tids[r.tid]
			var th *profile.Thread
			if ps != nil {
				th = ps.threads[r.tid]
			}
			if th == nil {
				// A thread the trace names only later: in a circular
				// (WPR's default, in-memory) trace the start rundown is
				// overwritten, and the end rundown names the threads.
				pid, ok := laterOwner(owners[r.tid], r.time)
				if !ok {
					continue
				}
				if ps = byPid[pid]; ps == nil {
					ps = getProc(pid, "", 0)
				}
				th = getThread(ps, r.tid, 0)
			}
			ps.samples++
			samples = append(samples, pending{th: th, proc: ps.p, time: t, raw: r.time, ip: r.ip, tid: r.tid})
		}
	}

	for _, ds := range b.defs {
		slices.SortStableFunc(ds, func(x, y keyDef) int { return cmp.Compare(x.time, y.time) })
	}
	resolve := b.resolve
	kernelMin := uint64(0xFFFF800000000000)
	if h.PointerSize == 4 {
		kernelMin = 0x80000000
	}
	isKernel := func(a uint64) bool { return a >= kernelMin }
	jit := map[int]([]method){}
	for pid, ms := range b.methods {
		slices.SortFunc(ms, func(x, y method) int { return cmp.Compare(x.start, y.start) })
		jit[int(pid)] = ms
	}
	var leaf []profile.Frame
	sampleTick := int64(interval)
	// Samples reached each thread in time order; the stack table too.
	for _, s := range samples {
		var kern, user []uint64
		for _, f := range b.frags[stackKey{s.tid, s.raw}] {
			fr := resolve(f)
			if len(fr) == 0 {
				continue
			}
			if isKernel(fr[0]) {
				if kern == nil {
					kern = fr
				}
			} else if user == nil {
				user = fr
			}
		}
		leaf = leaf[:0]
		if n := len(kern); n > 0 && !isKernel(kern[n-1]) {
			user = nil // a whole stack in one event
		}
		addrs := append(append([]uint64(nil), kern...), user...)
		if len(addrs) == 0 {
			addrs = []uint64{s.ip}
		}
		ms := jit[s.proc.Pid]
		for _, a := range addrs {
			f := profile.Frame{Address: a, Category: profile.CategoryUser}
			if isKernel(a) {
				f.Category = profile.CategoryKernel
			} else if m := findMethod(ms, a); m != nil {
				f = profile.Frame{Label: m.name, Category: profile.CategoryUser}
			}
			leaf = append(leaf, f)
		}
		s.th.Samples.Add(s.th.InternStack(leaf), s.time, sampleTick)
	}

	for _, ps := range procs {
		if len(ps.p.Threads) == 0 {
			continue
		}
		if ps.p.Pid == 0 && ps.p.Name == "" {
			ps.p.Name = "Idle"
		}
		libs := append(ps.p.Libs, kernelLibs...)
		ps.p.Libs = profile.SortLibs(slices.Clone(libs))
		prof.Processes = append(prof.Processes, ps.p)
	}
	return prof
}

// resolve returns the frames of a stack fragment. Cached stacks: bind each
// reference to the first definition of its key at or after the reference
// (keys are reused). b.defs must be sorted by time.
func (b *builder) resolve(f fragment) []uint64 {
	if !f.keyed {
		return f.frames
	}
	ds := b.defs[f.key]
	if len(ds) == 0 {
		return nil
	}
	i, _ := slices.BinarySearchFunc(ds, f.refTime, func(d keyDef, t int64) int { return cmp.Compare(d.time, t) })
	if i == len(ds) {
		i = len(ds) - 1
	}
	return ds[i].frames
}

// identityFromDisk fills in the identity of an image the trace has no
// RSDS event for from the file on disk, when the trace is read where it
// was recorded and the file is still the one that was loaded (same size,
// and same TimeDateStamp when the trace has one).
func (b *builder) identityFromDisk(l *profile.Lib, im *image) {
	if b.onDisk == nil {
		b.onDisk = map[string]*etw.PEIdentity{}
	}
	id, seen := b.onDisk[l.Path]
	if !seen {
		if got, err := etw.ReadPEIdentity(l.Path); err == nil {
			id = &got
		}
		b.onDisk[l.Path] = id
	}
	if id == nil || !id.HasRSDS || uint64(id.SizeOfImage) != im.Size || im.TimeDateStamp != 0 && im.TimeDateStamp != id.TimeDateStamp {
		return
	}
	l.BreakpadID = id.BreakpadID()
	l.CodeID = id.CodeID()
	if id.PDBPath != "" {
		l.DebugPath = id.PDBPath
		l.DebugName = etw.BaseName(id.PDBPath)
	}
}

// dosPath gives a kernel path the drive letter the trace's volume mappings
// say its device has.
func dosPath(p string, volumes [][2]string) string {
	best := -1
	for i, v := range volumes {
		if len(v[0]) <= len(p) && strings.EqualFold(p[:len(v[0])], v[0]) && (best < 0 || len(v[0]) > len(volumes[best][0])) {
			best = i
		}
	}
	if best >= 0 {
		v := volumes[best]
		rest := p[len(v[0]):]
		if !strings.HasSuffix(v[1], `\`) && !strings.HasPrefix(rest, `\`) {
			rest = `\` + rest
		} else if strings.HasSuffix(v[1], `\`) && strings.HasPrefix(rest, `\`) {
			rest = rest[1:]
		}
		return v[1] + rest
	}
	p = etw.NormalizePath(p)
	// A path with no device (\Windows\System32\kernel32.dll, as user-mode
	// image loads have them) is on the system drive.
	if strings.HasPrefix(p, `\`) && !strings.HasPrefix(p, `\\`) && !hasPrefixFold(p, `\Device\`) {
		drive := "C:"
		for _, v := range volumes {
			if strings.EqualFold(v[0], `\SystemRoot\`) {
				drive = v[1][:2]
			}
		}
		p = drive + p
	}
	return p
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// owner says that a thread event at time named the thread's process.
type owner struct {
	time int64
	pid  uint32
}

// laterOwner returns the process the first rundown or end event of a
// thread at or after time names.
func laterOwner(os []owner, time int64) (uint32, bool) {
	i, _ := slices.BinarySearchFunc(os, time, func(o owner, t int64) int { return cmp.Compare(o.time, t) })
	if i == len(os) {
		return 0, false
	}
	return os[i].pid, true
}

func findMethod(ms []method, a uint64) *method {
	i, found := slices.BinarySearchFunc(ms, a, func(m method, a uint64) int { return cmp.Compare(m.start, a) })
	if !found {
		i--
	}
	if i >= 0 && i < len(ms) && a >= ms[i].start && a < ms[i].end {
		return &ms[i]
	}
	return nil
}

func makeLib(im *image, volumes [][2]string) profile.Lib {
	path := dosPath(im.FileName, volumes)
	l := profile.Lib{
		Start: im.Base,
		End:   im.Base + im.Size,
		Name:  etw.BaseName(path),
		Path:  path,
	}
	tds, size := im.TimeDateStamp, im.Size
	if im.id != nil {
		if im.id.TimeDateStamp != 0 {
			tds = im.id.TimeDateStamp
		}
		if im.id.Size != 0 {
			size = im.id.Size
		}
	}
	if tds != 0 {
		l.CodeID = etw.CodeID(tds, size)
	}
	if im.rsds != nil {
		l.DebugPath = im.rsds.PDBPath
		l.DebugName = etw.BaseName(im.rsds.PDBPath)
		l.BreakpadID = etw.BreakpadID(im.rsds.GUID, im.rsds.Age)
	} else {
		l.DebugName = l.Name
	}
	return l
}
