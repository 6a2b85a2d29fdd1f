package perfdata

import (
	"strings"

	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/perfrecord"
)

// newDecoder sets up the decoding of the records of the sampling events,
// as gprof's live backend decodes its rings, but for what a file says
// differently: a decoder per sampling event, as each may lay its samples
// out its own way (a tracepoint's carry raw data), the first one's also
// decoding the other records.
func (f *File) newDecoder() {
	f.decs = map[int]*perfrecord.Decoder{}
	for i := range f.Attrs {
		if !f.Attrs[i].Sampling() {
			continue
		}
		a := &f.Attrs[i]
		format := perfrecord.Format{
			SampleType:       a.SampleType,
			ReadFormat:       a.ReadFormat,
			BranchSampleType: a.BranchSampleType,
			SampleIDAll:      a.SampleIDAll,
			Regs:             perfrecord.UserRegs(f.Arch, a.RegsUser),
			PeriodIsTime:     a.IsClock(),
			Trace:            a.Trace,
		}
		if !a.Freq {
			format.Period = a.Period // -c: every sample is one period
		}
		d := perfrecord.NewDecoder(f.bo, format)
		// perf shows a kernel-mode sample without a kernel stack at its
		// kernel address.
		d.KernelIP = true
		d.Event = len(f.sampling)
		// Marker files programs map (with perf record -d).
		d.KeepData = perfrecord.MarkerFile
		f.decs[i] = d
		f.sampling = append(f.sampling, i)
	}
	f.dec = f.decs[f.Sampled]
	// The events point into the file's bytes, which Parse keeps.
	f.arena.Borrow = true
}

// decode turns one kernel record into an event.
func (f *File) decode(typ uint32, rec []byte) {
	dec := f.dec
	if typ == perfrecord.RecordSample && len(f.Attrs) > 1 {
		ai, ok := f.sampleAttr(rec)
		if ok {
			dec, ok = f.decs[ai]
		}
		if !ok {
			f.OtherSamples++
			return
		}
	}
	e := dec.Decode(rec, &f.arena)
	switch e := e.(type) {
	case nil:
		return
	case *event.Sample:
		// gprof has always shown a file's kernel-mode samples by their
		// kernel frames (the IP where the chain has none), never with
		// the live backend's frame that stands for unsampled kernel time.
		e.InKernel = false
		if e.Regs != nil && (e.Regs.IP == 0 || e.Regs.SP == 0) {
			e.Regs = nil // not the registers an unwinder needs
		}
		if e.StackCopy == nil {
			e.Regs = nil // nothing to unwind: keep the kernel's chain
		}
		if len(e.Stack) == 0 && e.Regs == nil {
			return
		}
		f.Samples++
	case *event.Map:
		e.Path = validUTF8(e.Path)
		if e.BuildID == nil {
			e.BuildID = f.BuildIDs[e.Path]
		}
	case *event.Comm:
		e.Name = validUTF8(e.Name)
		if e.Name == "perf-exec" && !e.Exec {
			// perf's child waiting to exec the workload: it becomes the
			// workload (whose exec names it), or with -p it is the
			// unprofiled command that times the recording.
			return
		}
	case *event.Lost:
		f.Lost += e.Count
	}
	f.Events = append(f.Events, e)
}

// sampleAttr finds which event a sample belongs to by its id (perf
// requires every event of a file to put it in the same place).
func (f *File) sampleAttr(rec []byte) (int, bool) {
	if f.dec.Format().SampleType&(perfrecord.SampleIdentifier|perfrecord.SampleID) == 0 {
		return f.Sampled, true // no ids: perf cannot tell them apart either
	}
	id, ok := f.dec.SampleID(rec)
	if !ok {
		return 0, false
	}
	i, ok := f.ids[id]
	return i, ok
}

// validUTF8 returns s with invalid bytes replaced: a file's names come
// from another machine, in no known encoding.
func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
