package etl

import (
	"cmp"
	"slices"
	"strings"

	"github.com/gprof-dev/gprof/etwevent"
	"github.com/gprof-dev/gprof/etwevent/translate"
	"github.com/gprof-dev/gprof/objfile"
)

// An image's identity comes in KernelTraceControl events that xperf, WPR
// and PerfView add when they merge a trace: ImageID (TimeDateStamp and
// size) and DbgID_RSDS (the PDB's GUID, age and path), right before
// their Image event, in the same buffer, with its timestamp. Bases are
// reused (a DLL mapped as data, then another DLL at the same base), so
// they are joined on that adjacency, not on (pid, base); only an image
// with none right before it takes those of its process and base nearest
// in time, for a merger that does not keep them together.

// imageID is the identity events joined to one Image event.
type imageID struct {
	time int64
	pid  uint32
	base uint64
	size uint64
	id   *etwevent.ImageID
	rsds *etwevent.RSDS
}

type imageKey struct {
	pid  uint32
	base uint64
}

type timedID struct {
	time int64
	id   *etwevent.ImageID
	rsds *etwevent.RSDS
}

// identities joins identity events to images as the file is read.
type identities struct {
	// Every identity event by image, and the images that had none right
	// before them.
	all      map[imageKey][]timedID
	unjoined []*imageID
	joined   map[*etwevent.RSDS]bool // RSDS events joined to the image right after them
	// The identity events of the buffer being read, waiting for their
	// Image event.
	buf         int
	pendingID   *etwevent.ImageID
	pendingRSDS *etwevent.RSDS
	pendingTime int64
}

func (s *identities) init() {
	s.all = map[imageKey][]timedID{}
	s.joined = map[*etwevent.RSDS]bool{}
}

// buffer notes the buffer the next event is in: identity events are
// joined only to an image of their own buffer.
func (s *identities) buffer(buf int) {
	if buf != s.buf {
		s.buf = buf
		s.pendingID, s.pendingRSDS = nil, nil
	}
}

// event takes an ImageID or DbgID_RSDS event.
func (s *identities) event(e *etwevent.Event) {
	switch etwevent.KindOf(e) {
	case etwevent.KindImageID:
		if id, ok := etwevent.DecodeImageID(e.Payload, e.Ptr64); ok {
			s.pendingID, s.pendingTime = &id, e.Time
			k := imageKey{id.PID, id.Base}
			s.all[k] = append(s.all[k], timedID{e.Time, &id, nil})
		}
	case etwevent.KindDbgIDRSDS:
		if d, ok := etwevent.DecodeRSDS(e.Payload, e.Ptr64); ok {
			s.pendingRSDS, s.pendingTime = &d, e.Time
			k := imageKey{d.PID, d.Base}
			s.all[k] = append(s.all[k], timedID{e.Time, nil, &d})
		}
	}
}

// image takes an Image event and returns the identity events joined to
// it (more may be joined by joinLoose).
func (s *identities) image(e *etwevent.Event) *imageID {
	im, ok := etwevent.DecodeImage(e.Payload, e.Ptr64)
	if !ok {
		return nil
	}
	out := &imageID{time: e.Time, pid: im.PID, base: im.Base, size: im.Size}
	if s.pendingTime == e.Time {
		if s.pendingID != nil && s.pendingID.Base == im.Base {
			out.id = s.pendingID
		}
		if s.pendingRSDS != nil && s.pendingRSDS.Base == im.Base {
			out.rsds = s.pendingRSDS
			s.joined[out.rsds] = true
		}
	}
	s.pendingID, s.pendingRSDS = nil, nil
	if out.id == nil || out.rsds == nil {
		s.unjoined = append(s.unjoined, out)
	}
	return out
}

// joinLoose gives the images that had no identity events right before
// them those of the same process and base nearest in time, that no other
// image took.
func (s *identities) joinLoose() {
	for _, u := range s.unjoined {
		var bestID, bestRSDS *timedID
		dist := func(t *timedID) int64 { return max(t.time-u.time, u.time-t.time) }
		cands := s.all[imageKey{u.pid, u.base}]
		for i := range cands {
			c := &cands[i]
			if c.id != nil && (bestID == nil || dist(c) < dist(bestID)) {
				bestID = c
			}
			if c.rsds != nil && !s.joined[c.rsds] && (bestRSDS == nil || dist(c) < dist(bestRSDS)) {
				bestRSDS = c
			}
		}
		// The ImageID's size is the PE's SizeOfImage, which a driver's
		// small section alignment leaves short of the pages mapped.
		pages := func(n uint64) uint64 { return (n + 0xfff) &^ 0xfff }
		if u.id == nil && bestID != nil && (bestID.id.Size == 0 || pages(bestID.id.Size) == pages(u.size)) {
			u.id = bestID.id
		}
		if u.rsds == nil && bestRSDS != nil {
			u.rsds = bestRSDS.rsds
		}
	}
}

// identify is an image's identity: the trace's identity events, else the
// file on disk, where the trace is read on the machine it was recorded
// on and the file is still the one loaded; with neither, its
// TimeDateStamp and size, and the name of the file. It always gives one:
// the image's path names a file of the recording's machine.
func identify(im *etwevent.Image, path string, ids *imageID, disk diskIdentities) *objfile.Identity {
	name := etwevent.BaseName(path)
	out := &objfile.Identity{Format: objfile.PE, Name: name, Path: path, DebugName: name}
	tds, size := im.TimeDateStamp, im.Size
	if ids != nil && ids.id != nil {
		if ids.id.TimeDateStamp != 0 {
			tds = ids.id.TimeDateStamp
		}
		if ids.id.Size != 0 {
			size = ids.id.Size
		}
	}
	if tds != 0 {
		out.CodeID = objfile.PECodeID(tds, size)
	}
	if ids != nil && ids.rsds != nil {
		out.DebugPath = ids.rsds.PDBPath
		out.DebugName = etwevent.BaseName(ids.rsds.PDBPath)
		out.BreakpadID = objfile.PDBBreakpadID(ids.rsds.GUID, ids.rsds.Age)
		return out
	}
	if id := disk.identity(path, im.Size, im.TimeDateStamp); id != nil {
		return id
	}
	return out
}

// diskIdentities caches the identities read from files on disk.
type diskIdentities map[diskKey]*objfile.Identity

type diskKey struct {
	path string
	size uint64
	tds  uint32
}

func (d diskIdentities) identity(path string, size uint64, tds uint32) *objfile.Identity {
	k := diskKey{path, size, tds}
	id, seen := d[k]
	if !seen {
		id = translate.DiskIdentity(path, size, tds)
		d[k] = id
	}
	if id == nil {
		return nil
	}
	c := *id
	return &c
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
	p = etwevent.NormalizePath(p)
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

// method is a JIT-compiled method's code.
type method struct {
	start, end uint64
	name       string
}

// methods are each process's JIT-compiled methods, sorted by address.
type methods map[int][]method

func newMethods(byPid map[int64][]method) methods {
	out := methods{}
	for pid, ms := range byPid {
		slices.SortFunc(ms, func(x, y method) int { return cmp.Compare(x.start, y.start) })
		out[int(pid)] = ms
	}
	return out
}

// lookup names the method of process pid that holds address a.
func (m methods) lookup(pid int, a uint64) (string, bool) {
	ms := m[pid]
	i, found := slices.BinarySearchFunc(ms, a, func(m method, a uint64) int { return cmp.Compare(m.start, a) })
	if !found {
		i--
	}
	if i >= 0 && i < len(ms) && a >= ms[i].start && a < ms[i].end {
		return ms[i].name, true
	}
	return "", false
}
