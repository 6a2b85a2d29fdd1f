// Package pprof converts between gprof's profile model and pprof's
// profile.proto, the format of `go tool pprof`, Go's runtime/pprof, and
// the continuous profilers that ingest it (Pyroscope, Parca...).
//
// Written profiles have two sample values, samples/count and cpu/nanoseconds
// (the default, as in Go's CPU profiles); each sample carries its thread and
// process as labels (string labels "thread" and "process", numeric labels
// "tid" and "pid"), and locations carry their addresses, mappings with build
// IDs, and the names, files and lines stored in the profile, inline frames
// included (pprof lists a location's lines innermost first).
package pprof

import (
	"io"
	"slices"

	pprofpb "github.com/google/pprof/profile"

	"github.com/gprof-dev/gprof/internal/atomicfile"
	"github.com/gprof-dev/gprof/profile"
)

// Write writes p to w as a gzipped profile.proto.
func Write(w io.Writer, p *profile.Profile) error {
	return Convert(p).Write(w)
}

// Convert builds the pprof form of p.
func Convert(p *profile.Profile) *pprofpb.Profile {
	c := &converter{
		src: p,
		out: &pprofpb.Profile{
			SampleType: []*pprofpb.ValueType{
				{Type: "samples", Unit: "count"},
				{Type: "cpu", Unit: "nanoseconds"},
			},
			DefaultSampleType: "cpu",
			PeriodType:        &pprofpb.ValueType{Type: "cpu", Unit: "nanoseconds"},
			Period:            int64(p.Meta.Interval),
			TimeNanos:         p.Meta.StartTime.UnixNano(),
			DurationNanos:     p.Meta.Duration,
		},
		mappings:  map[mappingKey]*pprofpb.Mapping{},
		locations: map[locationKey]*pprofpb.Location{},
		functions: map[functionKey]*pprofpb.Function{},
	}
	if p.Meta.StartTime.IsZero() {
		c.out.TimeNanos = 0
	}
	if p.Meta.Product != "" {
		c.out.Comments = append(c.out.Comments, "product: "+p.Meta.Product)
	}
	if v := p.Meta.Extra[profile.ExtraOffCPU]; v != "" {
		// What the samples measure, for the trip back (Read): pprof
		// keeps no categories to tell an off-CPU sample by.
		c.out.Comments = append(c.out.Comments, profile.ExtraOffCPU+": "+v)
	}
	// pprof takes the first mapping for the main binary (its "File:"
	// line, and the binary 'go tool pprof' symbolizes by default).
	if lib := mainLib(p); lib != nil {
		c.mapping(lib)
	}
	for _, pr := range p.Processes {
		if pr == nil {
			continue
		}
		for _, th := range pr.Threads {
			if th != nil {
				c.thread(pr, th)
			}
		}
	}
	return c.out
}

// mainLib returns the main program's binary: the lib holding the
// outermost frames (_start, Go's rt0_go and goexit) of the first process's
// main thread, or failing that the lib named as the process is.
func mainLib(p *profile.Profile) *profile.Lib {
	for _, pr := range p.Processes {
		if pr == nil || len(pr.Libs) == 0 {
			continue
		}
		count := map[*profile.Lib]int{}
		var best *profile.Lib
		for _, th := range pr.Threads {
			if th == nil || !th.Main {
				continue
			}
			for s, pre := range th.Stacks.Prefix {
				f := th.Stacks.Frame[s]
				if pre != profile.NoStack || int(f) >= th.Frames.Len() || th.Frames.Frames[f].Label != "" {
					continue
				}
				if l := profile.FindLib(pr.Libs, th.Frames.Frames[f].Address); l != nil {
					count[l]++
					if best == nil || count[l] > count[best] || count[l] == count[best] && l.Start < best.Start {
						best = l
					}
				}
			}
		}
		if best == nil {
			if i := slices.IndexFunc(pr.Libs, func(l profile.Lib) bool { return l.Name != "" && l.Name == pr.Name }); i >= 0 {
				best = &pr.Libs[i]
			}
		}
		return best
	}
	return nil
}

type mappingKey struct {
	start, limit, offset uint64
	file, buildID        string
}

type locationKey struct {
	mapping uint64
	address uint64
	label   string
	caller  bool
	file    string // a Python frame's
	line    int32
}

type functionKey struct{ name, file string }

type converter struct {
	src       *profile.Profile
	out       *pprofpb.Profile
	mappings  map[mappingKey]*pprofpb.Mapping
	locations map[locationKey]*pprofpb.Location
	functions map[functionKey]*pprofpb.Function
}

func (c *converter) thread(pr *profile.Process, th *profile.Thread) {
	name := th.Name
	if name == "" && th.Main {
		name = pr.Name
	}
	labels := map[string][]string{"thread": {name}, "process": {pr.Name}}
	numLabels := map[string][]int64{"pid": {int64(pr.Pid)}, "tid": {int64(th.Tid)}}

	// Samples with the same stack are merged into one pprof sample; pprof
	// has no time axis for CPU profiles.
	type acc struct{ n, cpu int64 }
	byStack := map[int32]*acc{}
	var order []int32
	interval := int64(c.src.Meta.Interval)
	sm := &th.Samples
	for i, s := range sm.Stack {
		w := int64(1)
		if sm.Weight != nil && i < len(sm.Weight) {
			w = int64(sm.Weight[i])
		}
		cpu := w * interval
		if i < len(sm.CPUDelta) && sm.CPUDelta[i] >= 0 {
			cpu = sm.CPUDelta[i]
		}
		a := byStack[s]
		if a == nil {
			a = &acc{}
			byStack[s] = a
			order = append(order, s)
		}
		a.n += w
		a.cpu += cpu
	}
	st := &th.Stacks
	for _, s := range order {
		a := byStack[s]
		var locs []*pprofpb.Location
		caller := false
		for t, steps := s, 0; t >= 0 && int(t) < st.Len() && steps <= st.Len(); t, steps = st.Prefix[t], steps+1 {
			f := st.Frame[t]
			if f >= 0 && int(f) < th.Frames.Len() {
				locs = append(locs, c.location(pr, th.Frames.Frames[f], caller))
			}
			caller = true
		}
		c.out.Sample = append(c.out.Sample, &pprofpb.Sample{
			Location: locs, Value: []int64{a.n, a.cpu}, Label: labels, NumLabel: numLabels,
		})
	}
}

func (c *converter) location(pr *profile.Process, f profile.Frame, caller bool) *pprofpb.Location {
	var (
		m    *pprofpb.Mapping
		syms []profile.SymbolFrame
	)
	if f.Label == "" {
		if lib := profile.FindLib(pr.Libs, f.Address); lib != nil {
			m = c.mapping(lib)
			syms = c.src.Symbols.LookupFrame(lib.Key(), lib.Rel(f.Address), caller)
		} else if key, rel, ok := pr.Locate(f); ok {
			syms = c.src.Symbols.LookupFrame(key, rel, caller)
		}
	}
	k := locationKey{address: f.Address, label: f.Label, caller: caller, file: f.File, line: f.Line}
	if m != nil {
		k.mapping = m.ID
	}
	if l := c.locations[k]; l != nil {
		return l
	}
	l := &pprofpb.Location{ID: uint64(len(c.out.Location) + 1), Mapping: m}
	if f.Label == "" {
		l.Address = f.Address
	}
	switch {
	case f.Label != "":
		// A Python frame has its file and line.
		l.Line = []pprofpb.Line{{Function: c.function(f.Label, f.File), Line: int64(f.Line)}}
	case len(syms) > 0:
		// Symbols list the outer function first; pprof the innermost.
		for i := len(syms) - 1; i >= 0; i-- {
			s := syms[i]
			l.Line = append(l.Line, pprofpb.Line{Function: c.function(s.Function, s.File), Line: int64(s.Line)})
		}
	}
	if m != nil && len(l.Line) > 0 {
		m.HasFunctions, m.HasFilenames, m.HasLineNumbers = true, true, true
		if len(l.Line) > 1 {
			m.HasInlineFrames = true
		}
	}
	c.locations[k] = l
	c.out.Location = append(c.out.Location, l)
	return l
}

func (c *converter) mapping(lib *profile.Lib) *pprofpb.Mapping {
	file := lib.Path
	if file == "" {
		file = lib.Name
	}
	k := mappingKey{lib.Start, lib.End, lib.Offset, file, lib.CodeID}
	if m := c.mappings[k]; m != nil {
		return m
	}
	// pprof's Offset is the file offset of Start; gprof keeps the
	// relative address of Start, which is the same for the usual text
	// segment of an ELF file (whose first load segment maps file offset 0
	// at its base).
	m := &pprofpb.Mapping{ID: uint64(len(c.out.Mapping) + 1), Start: lib.Start, Limit: lib.End,
		Offset: lib.Offset, File: file, BuildID: lib.CodeID}
	c.mappings[k] = m
	c.out.Mapping = append(c.out.Mapping, m)
	return m
}

func (c *converter) function(name, file string) *pprofpb.Function {
	k := functionKey{name, file}
	if f := c.functions[k]; f != nil {
		return f
	}
	f := &pprofpb.Function{ID: uint64(len(c.out.Function) + 1), Name: name, SystemName: name, Filename: file}
	c.functions[k] = f
	c.out.Function = append(c.out.Function, f)
	return f
}

// WriteFile writes p to path as a gzipped profile.proto, atomically.
func WriteFile(path string, p *profile.Profile) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Write(w, p) })
}
