package pprof

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"
	"time"

	pprofpb "github.com/google/pprof/profile"

	"github.com/gprof-dev/gprof/format/internal/limit"
	"github.com/gprof-dev/gprof/profile"
)

// DecodedPerByte is about how many bytes of memory pprof's decoder holds
// per byte of protobuf (measured on a Go CPU profile and a gprof recording: 8 and 11),
// charged against what the file may make a reader hold (format/internal/limit).
const DecodedPerByte = 16

// Sniff reports whether head, the first bytes of a decompressed file, looks
// like a profile.proto: field 1 (sample_type, a message) or another of
// Profile's fields first, where a JSON profile starts with '{'.
func Sniff(head []byte) bool {
	if t := bytes.TrimLeft(head, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return false
	}
	if len(head) < 2 {
		return false
	}
	// A protobuf key (field 1 with wire type 2 is 0x0a, a newline, which is
	// why JSON is ruled out first): field number 1..14, wire type 0 or 2.
	field, wire := head[0]>>3, head[0]&7
	return field >= 1 && field <= 14 && (wire == 0 || wire == 2)
}

// Read reads a profile.proto (gzipped or not) into gprof's model. Samples
// are grouped into processes and threads by the "pid"/"tid" numeric labels
// (and named by the "process"/"thread" string labels) that gprof writes;
// profiles without them (Go's runtime/pprof) become one process and thread
// named after the main binary. pprof has no time axis for CPU profiles, so
// samples are spread evenly over the profile's duration in file order.
// Locations with an address inside a mapping that has a build ID become
// native frames of a library with that identity, their names stored in the
// profile's symbol table; others become named frames.
func Read(r io.Reader) (*profile.Profile, error) {
	f := limit.NewFile(r)
	br := bufio.NewReader(f)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("not a valid gzip file: %w", err)
		}
		defer zr.Close()
		src = limit.Inflated(zr, f)
	}
	data, err := io.ReadAll(src)
	if err != nil {
		return nil, err
	}
	// pprof's decoder makes objects of every message at once, which take
	// about DecodedPerByte bytes of memory per byte of protobuf.
	if err := limit.Check(int64(len(data))*DecodedPerByte, f.N()); err != nil {
		return nil, err
	}
	// Only the protobuf format: pprof's legacy text and binary parsers
	// trust their input's sizes.
	prof, err := pprofpb.ParseUncompressed(data)
	if err == nil {
		err = prof.CheckValid()
	}
	if err != nil {
		return nil, fmt.Errorf("not a valid pprof profile: %s", firstLine(err))
	}
	return fromPprof(prof)
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func fromPprof(src *pprofpb.Profile) (*profile.Profile, error) {
	countIdx, cpuIdx := -1, -1
	for i, st := range src.SampleType {
		switch {
		case st.Unit == "count" && countIdx < 0:
			countIdx = i
		case st.Unit == "nanoseconds" && cpuIdx < 0:
			cpuIdx = i
		}
	}
	if countIdx < 0 && cpuIdx < 0 {
		return nil, errors.New("pprof profile has no sample count or time values: only CPU profiles convert")
	}
	interval := time.Duration(src.Period)
	if src.PeriodType == nil || src.PeriodType.Unit != "nanoseconds" || interval <= 0 {
		interval = 0
	}
	p := &profile.Profile{Meta: profile.Meta{
		Product:  "pprof",
		Interval: interval,
		Duration: src.DurationNanos,
		Extra:    map[string]string{"imported_from": "pprof"},
	}}
	if src.TimeNanos > 0 {
		p.Meta.StartTime = time.Unix(0, src.TimeNanos)
	}
	for _, c := range src.Comments {
		if s, ok := strings.CutPrefix(c, "product: "); ok {
			p.Meta.Product = s
		}
		if s, ok := strings.CutPrefix(c, profile.ExtraOffCPU+": "); ok {
			p.Meta.Extra[profile.ExtraOffCPU] = s
		}
	}
	mainName := "pprof"
	if len(src.Mapping) > 0 && src.Mapping[0].File != "" {
		mainName = path.Base(src.Mapping[0].File)
	}
	if interval == 0 {
		p.Meta.Interval = time.Millisecond // the Firefox Profiler needs one
	}
	r := &reader{p: p, src: src, procs: map[int64]*profile.Process{}, threads: map[[2]int64]*profile.Thread{}, libs: map[uint64]*profile.Lib{}}
	n := int64(len(src.Sample))
	if p.Meta.Duration <= 0 {
		p.Meta.Duration = n * int64(p.Meta.Interval)
	}
	for i, s := range src.Sample {
		pid, tid := numLabel(s, "pid"), numLabel(s, "tid")
		pr := r.process(pid, label(s, "process", mainName))
		th := r.thread(pr, tid, label(s, "thread", pr.Name))
		var frames []profile.Frame
		for _, loc := range s.Location {
			frames = append(frames, r.frames(pr, loc)...)
		}
		stack := th.InternStack(frames)
		count := int64(1)
		if countIdx >= 0 {
			count = s.Value[countIdx]
		}
		cpu := int64(-1)
		if cpuIdx >= 0 {
			cpu = s.Value[cpuIdx]
		}
		if count <= 0 && cpu <= 0 {
			continue
		}
		if count <= 0 {
			count = 1
		}
		at := p.Meta.Duration * int64(i) / max(n, 1)
		th.Samples.Add(stack, at, cpu)
		if count != 1 {
			if th.Samples.Weight == nil {
				th.Samples.Weight = make([]int32, th.Samples.Len())
				for j := range th.Samples.Weight {
					th.Samples.Weight[j] = 1
				}
			}
			// Weights are int32 in the model; CPU profiles count far less.
			th.Samples.Weight[th.Samples.Len()-1] = int32(min(count, math.MaxInt32))
		}
	}
	for _, pr := range p.Processes {
		pr.End = p.Meta.Duration
		pr.Libs = profile.SortLibs(pr.Libs)
		for _, th := range pr.Threads {
			th.End = p.Meta.Duration
		}
	}
	if len(p.Processes) == 0 {
		return nil, errors.New("pprof profile has no samples")
	}
	return p, nil
}

type reader struct {
	p       *profile.Profile
	src     *pprofpb.Profile
	procs   map[int64]*profile.Process
	threads map[[2]int64]*profile.Thread
	libs    map[uint64]*profile.Lib // by mapping ID, per process below
}

func numLabel(s *pprofpb.Sample, k string) int64 {
	if v := s.NumLabel[k]; len(v) > 0 {
		return v[0]
	}
	return 0
}

func label(s *pprofpb.Sample, k, def string) string {
	if v := s.Label[k]; len(v) > 0 && v[0] != "" {
		return v[0]
	}
	return def
}

func (r *reader) process(pid int64, name string) *profile.Process {
	if pr := r.procs[pid]; pr != nil {
		return pr
	}
	pr := &profile.Process{Pid: int(pid), Name: name, ExitCode: -1}
	r.procs[pid] = pr
	r.p.Processes = append(r.p.Processes, pr)
	return pr
}

func (r *reader) thread(pr *profile.Process, tid int64, name string) *profile.Thread {
	k := [2]int64{int64(pr.Pid), tid}
	if th := r.threads[k]; th != nil {
		return th
	}
	th := &profile.Thread{Tid: int(tid), Name: name, Main: tid == int64(pr.Pid) || len(pr.Threads) == 0 && tid == 0}
	r.threads[k] = th
	pr.Threads = append(pr.Threads, th)
	return th
}

// frames returns loc's frames, innermost first, as the model interns them.
func (r *reader) frames(pr *profile.Process, loc *pprofpb.Location) []profile.Frame {
	if m := loc.Mapping; m != nil && loc.Address >= m.Start && loc.Address < m.Limit && isHexID(m.BuildID) {
		lib := r.lib(pr, m)
		if len(loc.Line) > 0 {
			syms := make([]profile.SymbolFrame, 0, len(loc.Line))
			for i := len(loc.Line) - 1; i >= 0; i-- {
				ln := loc.Line[i]
				sf := profile.SymbolFrame{Line: int(ln.Line)}
				if ln.Function != nil {
					sf.Function, sf.File = ln.Function.Name, ln.Function.Filename
				}
				syms = append(syms, sf)
			}
			if r.p.Symbols == nil {
				r.p.Symbols = &profile.SymbolTable{}
			}
			r.p.Symbols.Add(lib.Key(), lib.Rel(loc.Address), syms)
		}
		return []profile.Frame{{Address: loc.Address, Category: profile.CategoryUser}}
	}
	if len(loc.Line) == 0 {
		return []profile.Frame{{Label: fmt.Sprintf("0x%x", loc.Address), Category: profile.CategoryUser}}
	}
	out := make([]profile.Frame, 0, len(loc.Line))
	for _, ln := range loc.Line {
		name := "?"
		if ln.Function != nil && ln.Function.Name != "" {
			name = ln.Function.Name
		}
		out = append(out, profile.Frame{Label: name, Category: profile.CategoryUser})
	}
	return out
}

// lib returns pr's library for mapping m. Its base is the mapping's start
// less its file offset, as for an ELF file's text segment.
func (r *reader) lib(pr *profile.Process, m *pprofpb.Mapping) *profile.Lib {
	key := m.ID<<20 ^ uint64(pr.Pid)
	if l := r.libs[key]; l != nil {
		return l
	}
	id, _ := hex.DecodeString(m.BuildID)
	name := path.Base(m.File)
	l := profile.Lib{Start: m.Start, End: m.Limit, Offset: m.Offset, Name: name, Path: m.File,
		DebugName: name, DebugPath: m.File, BreakpadID: breakpadID(id), CodeID: strings.ToLower(m.BuildID)}
	pr.Libs = append(pr.Libs, l)
	// Libs is sorted only at the end; hand out a stable copy for lookups.
	cp := l
	r.libs[key] = &cp
	return &cp
}

func isHexID(s string) bool {
	if len(s) < 8 || len(s)%2 != 0 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// breakpadID is the breakpad ID of an ELF build ID, as symbol servers
// know it: the first 16 bytes as a GUID (first three fields byte-swapped
// from little-endian), then age 0.
func breakpadID(id []byte) string {
	b := make([]byte, 16)
	copy(b, id)
	slices.Reverse(b[0:4])
	slices.Reverse(b[4:6])
	slices.Reverse(b[6:8])
	return strings.ToUpper(hex.EncodeToString(b)) + "0"
}
