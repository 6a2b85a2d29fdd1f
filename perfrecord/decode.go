// Package perfrecord decodes the records Linux perf_event writes, in a ring
// or a perf.data file, into the neutral events of package event.
//
// 'perf record' copies the kernel's ring records into its files unchanged,
// so one decoder serves both: the live backend (attach/perf) decodes its
// rings with it, in the host's byte order, and the perf.data reader
// (record/perfdata) a file's records, in the byte order of the machine that
// recorded it. What only one of them knows stays there: opening events,
// reading rings, which tasks to keep and what /proc says of a mapping
// (live); a file's header, its several events, feature sections and
// compressed records (file).
//
// A record is a header (u32 type, u16 misc, u16 size) and a body laid out
// as the sampling event's attr (struct perf_event_attr) says: which fields
// a sample carries (sample_type) and whether every other record ends with
// the fields that identify it (sample_id_all: the sample_id trailer). A
// Format holds what decoding needs of the attr.
package perfrecord

import (
	"encoding/binary"

	"github.com/gprof-dev/gprof/event"
)

// Format is what decoding needs of the attr of the events whose records it
// reads (all events writing into one ring, or the one sampled event of a
// file, share it).
type Format struct {
	SampleType       uint64 // Sample* bits
	ReadFormat       uint64 // Read* bits: the layout of a SampleRead value
	BranchSampleType uint64 // for BranchHWIndex
	// SampleIDAll says other records end with the sample_id trailer: the
	// fields of SampleTID, SampleTime, SampleID, SampleStreamID,
	// SampleCPU and SampleIdentifier the sample type has, in that order.
	SampleIDAll bool
	Regs        RegsLayout // of the SampleRegsUser array
	// PeriodIsTime says the event counts CPU time in ns (cpu-clock,
	// task-clock), so a sample's period is its CPUDelta.
	PeriodIsTime bool
	// Period is every sample's period where samples do not carry theirs
	// (no SamplePeriod: a fixed period); 0 when it varies.
	Period uint64
	// Trace, when set, lays out the samples' raw data (SampleRaw): the
	// event is a tracepoint or probe, whose hits' fields go into
	// event.Sample.Fields.
	Trace *TraceFormat
}

// EventFormat is what decoding needs of one of several events that share
// a Format's layout (a live backend's events all ask for the same fields)
// but differ in what their samples mean.
type EventFormat struct {
	PeriodIsTime bool
	Period       uint64
	Trace        *TraceFormat
}

// A Filter picks the tasks whose records are decoded, where an event sees
// every task on its CPU.
type Filter interface {
	// Keep reports whether the records of thread tid of process pid are
	// decoded. A sample's is asked as soon as its TID field is read, so
	// the samples of other tasks cost little more than a look.
	Keep(pid, tid int) bool
	// Fork tells of a task from a FORK record, before Keep is asked about
	// the record, so that a filter can follow the processes it keeps.
	Fork(pid, ppid int)
}

// A Decoder decodes records of one Format into events.
//
// A record that lacks a time (a sample without SampleTime, a record without
// the trailer, a FORK or EXIT dated 0) takes that of the record decoded
// before it, which keeps it in place when events are ordered by time. A
// side-band record whose trailer says 0 keeps 0: perf writes those for
// what ran before the recording began.
type Decoder struct {
	// Filter, when set, drops the records of the tasks it does not keep.
	Filter Filter
	// SwitchIDs names the events (by SampleIdentifier) that sample at
	// context switches: their samples are Switch ones, which took no CPU
	// time.
	SwitchIDs map[uint64]bool
	// EventIDs, when set, says which of several events took a sample, by
	// its id (SampleIdentifier, else SampleID): its index, which becomes
	// the sample's event.Sample.Event, in Events, which says what its
	// period and raw data mean instead of the Format. A sample whose id
	// it lacks is dropped.
	EventIDs map[uint64]int
	Events   []EventFormat
	// Event is the event.Sample.Event of every sample when EventIDs is
	// nil: the index of the one event this decoder reads.
	Event int
	// KernelIP makes the sampled instruction of a kernel-mode sample that
	// has no kernel frames its one kernel frame, as perf report shows such
	// a sample. Without it such a sample has no kernel frame (the live
	// backend leaves kernel stacks out unless asked for them, and marks
	// the sample InKernel instead).
	KernelIP bool
	// ReadCPU says samples carry their event's count (SampleRead, not a
	// group): the CPU time of the thread on the sample's CPU, kernel mode
	// included even where only user mode is sampled. A sample's CPUDelta
	// is then the count's growth since the thread's previous sample on
	// that CPU (a thread has an event per CPU).
	ReadCPU bool

	// Dropped counts the samples Filter dropped.
	Dropped uint64
	// Throttled says a THROTTLE record came: the kernel held sampling back.
	Throttled bool
	// NoStack sums, with ReadCPU, the CPU time (ns) the counts show beyond
	// the samples' periods: time spent where no sample is taken.
	NoStack int64
	// KernelStart is where the kernel's text was mapped, from the MMAP
	// record perf writes for [kernel.kallsyms]; 0 when none came.
	KernelStart uint64
	// KeepData, when set, picks the mappings of data (not code) that are
	// decoded, as event.Map with Data set, by their NUL-terminated path;
	// others are dropped, as every data mapping is without it.
	KeepData func(path []byte) bool

	f           Format
	o           order
	trailerLen  int // bytes of the sample_id trailer
	trailerTime int // offset of the time in the trailer; -1 if none
	trailerTid  int // offset of pid, tid in the trailer; -1 if none
	lastTime    int64

	// counts holds, with ReadCPU, each thread's count at its previous
	// sample, by CPU. exited and exitedBefore hold the threads that
	// exited in this round of records and the one before: their counts
	// are forgotten a full round late (see RoundDone).
	counts               map[int][]uint64
	exited, exitedBefore []int

	// names interns the names of threads and paths of mappings, which
	// repeat, so that decoding them allocates nothing.
	names map[string]string
	// fields is scratch for a tracepoint hit's fields.
	fields []byte
}

// maxNames bounds the names a Decoder keeps: past it, new names are not
// interned.
const maxNames = 1 << 14

// NewDecoder returns a decoder of records of format f written in byte
// order bo (binary.NativeEndian for a ring).
func NewDecoder(bo binary.ByteOrder, f Format) *Decoder {
	d := &Decoder{f: f, o: order{big: bo.Uint16([]byte{0, 1}) == 1}, trailerTime: -1, trailerTid: -1, names: map[string]string{}}
	if f.SampleIDAll {
		for _, bit := range []uint64{SampleTID, SampleTime, SampleID, SampleStreamID, SampleCPU, SampleIdentifier} {
			if f.SampleType&bit == 0 {
				continue
			}
			switch bit {
			case SampleTime:
				d.trailerTime = d.trailerLen
			case SampleTID:
				d.trailerTid = d.trailerLen
			}
			d.trailerLen += 8
		}
	}
	return d
}

// Format returns the format d decodes.
func (d *Decoder) Format() Format { return d.f }

// Decode decodes one record, header included, into an event held by a. It
// returns nil for a record that makes no event: a task's that Filter drops,
// a mapping of data or of the kernel, a kind gprof does not use, or one
// too short for its kind (a sample cut short past its call chain keeps
// what came before). The record is read only during the call, unless a
// borrows.
func (d *Decoder) Decode(rec []byte, a *Arena) event.Event {
	if len(rec) < 8 {
		return nil
	}
	typ := d.o.u32(rec)
	misc := d.o.u16(rec[4:])
	switch typ {
	case RecordSample:
		if s := d.sample(rec, misc, a); s != nil {
			return s
		}
	case RecordMmap, RecordMmap2:
		if m := d.mmap(typ, misc, rec, a); m != nil {
			return m
		}
	case RecordComm:
		body := d.body(rec)
		if len(body) < 8 {
			return nil
		}
		pid, tid := d.o.i32(body), d.o.i32(body[4:])
		if d.Filter != nil && !d.Filter.Keep(pid, tid) {
			return nil
		}
		c := a.comms.next(leastOthers)
		c.Time = d.timeOf(rec)
		c.Pid, c.Tid = pid, tid
		c.Name = d.name(body[8:])
		c.Exec = misc&MiscCommExec != 0
		return c
	case RecordFork, RecordExit:
		if len(rec) < 32 {
			return nil
		}
		pid, ppid := d.o.i32(rec[8:]), d.o.i32(rec[12:])
		tid, ptid := d.o.i32(rec[16:]), d.o.i32(rec[20:])
		t := int64(d.o.u64(rec[24:]))
		if t > 0 {
			d.lastTime = t
		} else {
			t = d.lastTime
		}
		if d.Filter != nil {
			if typ == RecordFork {
				d.Filter.Fork(pid, ppid)
			}
			if !d.Filter.Keep(pid, tid) {
				return nil
			}
		}
		if typ == RecordFork {
			f := a.forks.next(leastOthers)
			*f = event.Fork{Time: t, Pid: pid, Tid: tid, Ppid: ppid, Ptid: ptid}
			return f
		}
		if d.ReadCPU {
			d.exited = append(d.exited, tid)
		}
		e := a.exits.next(leastOthers)
		*e = event.Exit{Time: t, Pid: pid, Tid: tid}
		return e
	case RecordLost:
		if len(rec) < 24 { // id, lost
			return nil
		}
		l := a.losts.next(leastOthers)
		l.Count = d.o.u64(rec[16:])
		l.Time = d.timeOf(rec)
		return l
	case RecordLostSamples:
		if len(rec) < 16 {
			return nil
		}
		l := a.losts.next(leastOthers)
		l.Count = d.o.u64(rec[8:])
		l.Time = d.timeOf(rec)
		return l
	case RecordThrottle:
		d.Throttled = true
	case RecordSwitch, RecordSwitchCPUWide:
		// The trailer names the task switched out or in (a per-CPU
		// event's record also names the task on the other side of the
		// switch, which is not needed).
		if d.trailerTid < 0 || len(rec) < 8+d.trailerLen {
			return nil
		}
		off := len(rec) - d.trailerLen + d.trailerTid
		pid, tid := d.o.i32(rec[off:]), d.o.i32(rec[off+4:])
		if d.Filter != nil && !d.Filter.Keep(pid, tid) {
			return nil
		}
		s := a.switches.next(leastOthers)
		s.Time = d.timeOf(rec)
		s.Pid, s.Tid = pid, tid
		s.Out = misc&MiscSwitchOut != 0
		s.Preempt = misc&MiscSwitchOutPreempt != 0
		return s
	}
	return nil
}

// RoundDone tells d that every ring was drained once more: with ReadCPU,
// the counts of the threads that exited a round ago are forgotten, as
// samples they took on another CPU before exiting may have sat in a ring
// drained after their EXIT.
func (d *Decoder) RoundDone() {
	for _, tid := range d.exitedBefore {
		delete(d.counts, tid)
	}
	d.exitedBefore, d.exited = d.exited, d.exitedBefore[:0]
}

// SampleID returns the id of the event that took a sample, from where the
// format puts it (SampleIdentifier first, else SampleID), and false when
// the format has no id or the record is too short for it.
func (d *Decoder) SampleID(rec []byte) (uint64, bool) {
	st := d.f.SampleType
	p := 8
	switch {
	case st&SampleIdentifier != 0:
	case st&SampleID != 0:
		for _, bit := range []uint64{SampleIP, SampleTID, SampleTime, SampleAddr} {
			if st&bit != 0 {
				p += 8
			}
		}
	default:
		return 0, false
	}
	if p+8 > len(rec) {
		return 0, false
	}
	return d.o.u64(rec[p:]), true
}

// RecordTime returns when a record was written: a sample's time, a FORK's
// or EXIT's own, another record's from its sample_id trailer. It reports
// false where the format carries no time for the record.
func (d *Decoder) RecordTime(rec []byte) (int64, bool) {
	if len(rec) < 8 {
		return 0, false
	}
	switch d.o.u32(rec) {
	case RecordSample:
		st := d.f.SampleType
		if st&SampleTime == 0 {
			return 0, false
		}
		p := 8
		for _, bit := range []uint64{SampleIdentifier, SampleIP, SampleTID} {
			if st&bit != 0 {
				p += 8
			}
		}
		if p+8 > len(rec) {
			return 0, false
		}
		return int64(d.o.u64(rec[p:])), true
	case RecordFork, RecordExit:
		if len(rec) < 32 {
			return 0, false
		}
		return int64(d.o.u64(rec[24:])), true
	}
	if d.trailerTime < 0 || len(rec) < 8+d.trailerLen {
		return 0, false
	}
	return int64(d.o.u64(rec[len(rec)-d.trailerLen+d.trailerTime:])), true
}

// body returns a side-band record without its header and trailer, nil when
// it is shorter than those.
func (d *Decoder) body(rec []byte) []byte {
	if len(rec) < 8+d.trailerLen {
		return nil
	}
	return rec[8 : len(rec)-d.trailerLen]
}

// timeOf returns a side-band record's time, from its trailer.
func (d *Decoder) timeOf(rec []byte) int64 {
	if d.trailerTime < 0 || len(rec) < 8+d.trailerLen {
		return d.lastTime
	}
	if t := int64(d.o.u64(rec[len(rec)-d.trailerLen+d.trailerTime:])); t > 0 {
		d.lastTime = t
		return t
	}
	return 0
}

// mmap decodes MMAP (pid, tid, addr, len, pgoff, filename) and MMAP2 (the
// same, then either device, inode and its generation or a build-id, then
// prot, flags, filename) into a mapping of code in a process. The kernel's
// own mapping (pid -1, or kernel mode, which perf writes) only sets
// KernelStart; data mappings are dropped.
func (d *Decoder) mmap(typ uint32, misc uint16, rec []byte, a *Arena) *event.Map {
	body := d.body(rec)
	fixed := 32
	if typ == RecordMmap2 {
		fixed = 32 + 24 + 8
	}
	if len(body) < fixed {
		return nil
	}
	pid := d.o.i32(body)
	if pid == -1 || misc&MiscCPUModeMask == MiscKernel {
		if path := cString(body[fixed:]); path == "[kernel.kallsyms]_text" || d.KernelStart == 0 && path == "[kernel.kallsyms]" {
			d.KernelStart = d.o.u64(body[8:])
		}
		return nil
	}
	data := misc&MiscMmapData != 0 || typ == RecordMmap2 && d.o.u32(body[56:])&protExec == 0
	if data && (d.KeepData == nil || !d.KeepData(body[fixed:])) {
		return nil
	}
	if d.Filter != nil && !d.Filter.Keep(pid, d.o.i32(body[4:])) {
		return nil
	}
	t := d.timeOf(rec)
	m := a.maps.next(leastOthers)
	m.Data = data
	m.Tid = d.o.i32(body[4:])
	m.Time, m.Pid = t, pid
	m.Start = d.o.u64(body[8:])
	m.End = m.Start + d.o.u64(body[16:])
	m.FileOffset = d.o.u64(body[24:])
	m.Path = d.name(body[fixed:])
	if typ == RecordMmap2 {
		if misc&MiscMmapBuildID != 0 {
			if n := int(body[32]); n > 0 && n <= 20 {
				m.BuildID = a.byteSlice(body[36 : 36+n])
			}
		} else {
			m.Dev = linuxDev(d.o.u32(body[32:]), d.o.u32(body[36:]))
			m.Inode = d.o.u64(body[40:])
		}
	}
	return m
}

// linuxDev encodes a device number the way Linux's makedev does, as
// stat(2) reports it.
func linuxDev(maj, min uint32) uint64 {
	M, m := uint64(maj), uint64(min)
	return M&0xfffff000<<32 | M&0xfff<<8 | m&0xffffff00<<12 | m&0xff
}

// sample decodes a SAMPLE record; its fields follow in sample_type bit
// order (perf_event_open(2)).
func (d *Decoder) sample(rec []byte, misc uint16, a *Arena) *event.Sample {
	st := d.f.SampleType
	c := cursor{rec: rec, p: 8, o: d.o}
	s := a.samples.next(leastSamples)
	s.CPUDelta = -1
	s.InKernel = misc&MiscCPUModeMask == MiscKernel
	// Up to the call chain, a sample cut short is none.
	fail := func() *event.Sample {
		a.samples.giveBack()
		return nil
	}
	var ip, id uint64
	if st&SampleIdentifier != 0 {
		if !c.has(8) {
			return fail()
		}
		id = c.u64()
		s.Switch = d.SwitchIDs[id]
	}
	if st&SampleIP != 0 {
		if !c.has(8) {
			return fail()
		}
		ip = c.u64()
	}
	if st&SampleTID != 0 {
		if !c.has(8) {
			return fail()
		}
		s.Pid, s.Tid = d.o.i32(rec[c.p:]), d.o.i32(rec[c.p+4:])
		c.p += 8
		if d.Filter != nil && !d.Filter.Keep(s.Pid, s.Tid) {
			// Another task's, seen by a per-CPU event: given back
			// before anything is copied.
			d.Dropped++
			return fail()
		}
	}
	if st&SampleTime != 0 {
		if !c.has(8) {
			return fail()
		}
		s.Time = int64(c.u64())
		d.lastTime = s.Time
	} else {
		s.Time = d.lastTime
	}
	if st&SampleAddr != 0 && !c.skip(8) {
		return fail()
	}
	if st&SampleID != 0 {
		if !c.has(8) {
			return fail()
		}
		if v := c.u64(); st&SampleIdentifier == 0 {
			id = v
		}
	}
	if st&SampleStreamID != 0 && !c.skip(8) {
		return fail()
	}
	periodIsTime, fixed, trace := d.f.PeriodIsTime, d.f.Period, d.f.Trace
	s.Event = d.Event
	if d.EventIDs != nil && !s.Switch {
		ev, ok := d.EventIDs[id]
		if !ok || ev < 0 || ev >= len(d.Events) {
			return fail()
		}
		s.Event = ev
		ef := &d.Events[ev]
		periodIsTime, fixed, trace = ef.PeriodIsTime, ef.Period, ef.Trace
	}
	if st&SampleCPU != 0 {
		if !c.has(8) { // u32 cpu, u32 reserved
			return fail()
		}
		s.CPU = int(d.o.u32(rec[c.p:]))
		c.p += 8
	}
	if st&SamplePeriod != 0 {
		if !c.has(8) {
			return fail()
		}
		period := c.u64()
		if s.Switch {
			s.CPUDelta = 0 // a count of switches, not of time
		} else if periodIsTime {
			s.CPUDelta = int64(period)
		} else {
			s.Period = period
		}
	} else if s.Switch {
		s.CPUDelta = 0
	} else if periodIsTime && fixed != 0 {
		s.CPUDelta = int64(fixed) // every sample is one period
	} else if !periodIsTime {
		s.Period = fixed
	}
	if st&SampleRead != 0 {
		value, ok := d.readValue(&c)
		if !ok {
			return fail()
		}
		if d.ReadCPU && !s.Switch && periodIsTime {
			if delta := d.cpuDelta(s.Tid, s.CPU, value); delta >= 0 {
				if s.CPUDelta >= 0 {
					d.NoStack += delta - s.CPUDelta
				}
				s.CPUDelta = delta
			}
		}
	}
	if st&SampleCallchain != 0 {
		if !c.has(8) {
			return fail()
		}
		nr := c.u64()
		if nr > uint64(len(rec)-c.p)/8 {
			return fail()
		}
		d.callchain(s, rec[c.p:c.p+8*int(nr)], ip, a)
		c.p += 8 * int(nr)
	} else if st&SampleIP != 0 && (!s.InKernel || d.KernelIP) {
		s.Stack = a.frameSlice(1)
		s.Stack[0] = ip
		if s.InKernel {
			s.KernelFrames = 1
		}
	}
	// From here on, a sample cut short keeps what it has.
	if st&SampleRaw != 0 {
		// u32 size, then the data, padded so that what follows is
		// 8-byte aligned.
		if !c.has(4) {
			return s
		}
		n := uint64(d.o.u32(rec[c.p:]))
		c.p += 4
		if n > uint64(len(rec)-c.p) {
			return s
		}
		if trace != nil && n > 0 {
			d.fields = trace.AppendFields(d.fields[:0], rec[c.p:c.p+int(n)], d.o.big)
			s.Fields = a.ownBytes(d.fields)
		}
		c.p += int(n)
	}
	if st&SampleBranchStack != 0 {
		// u64 nr, [u64 hw_idx], then nr entries of 24 bytes.
		if !c.has(8) {
			return s
		}
		nr := c.u64()
		if d.f.BranchSampleType&BranchHWIndex != 0 && !c.skip(8) {
			return s
		}
		if nr > uint64(len(rec))/24 || !c.skip(24*nr) {
			return s
		}
	}
	if st&SampleRegsUser != 0 {
		if !c.has(8) {
			return s
		}
		abi := c.u64()
		s.NoUserRegs = abi == RegsABINone
		if abi != RegsABINone {
			l := &d.f.Regs
			if !c.has(8 * l.N) {
				return s
			}
			regs := rec[c.p : c.p+8*l.N]
			at := func(i int) uint64 {
				if i < 0 {
					return 0
				}
				return d.o.u64(regs[8*i:])
			}
			r := a.regs.next(leastSamples)
			r.IP, r.SP, r.FP, r.LR, r.BX = at(l.IP), at(l.SP), at(l.FP), at(l.LR), at(l.BX)
			s.Regs = r
			if l.NCallee > 0 && l.Callee >= 0 && l.Callee+l.NCallee <= l.N {
				s.CalleeRegs = a.frameSlice(l.NCallee)
				for i := range s.CalleeRegs {
					s.CalleeRegs[i] = at(l.Callee + i)
				}
			}
			c.p += 8 * l.N
		}
	}
	if st&SampleStackUser != 0 {
		// u64 size, the copy, u64 dyn_size: how much of it is stack.
		if !c.has(8) {
			return s
		}
		if size := c.u64(); size > 0 {
			if size > uint64(len(rec)-c.p) || !c.has(int(size)+8) {
				return s
			}
			data := rec[c.p : c.p+int(size)]
			c.p += int(size)
			if dyn := c.u64(); dyn > 0 {
				s.StackCopy = a.byteSlice(data[:min(dyn, size)])
			}
		}
	}
	return s
}

// callchain sets s's stack from its chain of nr u64s, in which context
// markers say whose frames follow. Frames go into one arena slice sized
// for the whole chain.
func (d *Decoder) callchain(s *event.Sample, chain []byte, ip uint64, a *Arena) {
	stack := a.frameSlice(len(chain) / 8)
	k, kernel := 0, 0
	ctx := ContextUser // the first marker says which; default to user
	for ; len(chain) >= 8; chain = chain[8:] {
		v := d.o.u64(chain)
		if v >= ContextMax {
			ctx = v
			continue
		}
		if ctx == ContextKernel || ctx == ContextHV || ctx == ContextGuestKernel {
			if k != kernel {
				continue // a kernel frame after user frames: malformed
			}
			kernel++
		}
		stack[k] = v
		k++
	}
	if k == 0 {
		// No frames: the sampled instruction stands for the stack,
		// unless it is a kernel address whose stack was left out.
		if s.InKernel && !d.KernelIP {
			s.Stack = stack[:0]
			return
		}
		if cap(stack) == 0 {
			stack = a.frameSlice(1)
		}
		stack = stack[:1]
		stack[0] = ip
		k = 1
		if s.InKernel {
			kernel = 1
		}
	}
	s.Stack = stack[:k]
	s.KernelFrames = kernel
}

// readValue reads a SampleRead value and returns the event's count, the
// value itself unless the format reads a group.
func (d *Decoder) readValue(c *cursor) (uint64, bool) {
	rf := d.f.ReadFormat
	per := uint64(8) // value
	if rf&ReadID != 0 {
		per += 8
	}
	if rf&ReadLost != 0 {
		per += 8
	}
	var times uint64
	if rf&ReadTotalTimeEnabled != 0 {
		times += 8
	}
	if rf&ReadTotalTimeRunning != 0 {
		times += 8
	}
	if rf&ReadGroup == 0 {
		// value, [time_enabled], [time_running], [id], [lost]
		if !c.has(8) {
			return 0, false
		}
		v := d.o.u64(c.rec[c.p:])
		return v, c.skip(per + times)
	}
	// nr, [time_enabled], [time_running], then nr of {value, [id], [lost]}
	if !c.has(8) {
		return 0, false
	}
	nr := c.u64()
	if nr > uint64(len(c.rec)) {
		return 0, false
	}
	return 0, c.skip(times + nr*per)
}

// cpuDelta returns the CPU time tid used on cpu since its previous sample
// there, given the event's count now; -1 when not known.
func (d *Decoder) cpuDelta(tid, cpu int, count uint64) int64 {
	if cpu < 0 || cpu > 1<<16 {
		return -1
	}
	if d.counts == nil {
		d.counts = map[int][]uint64{}
	}
	c := d.counts[tid]
	if cpu >= len(c) {
		c = append(c, make([]uint64, cpu+1-len(c))...)
		d.counts[tid] = c
	}
	prev := c[cpu]
	c[cpu] = count
	if count < prev {
		return -1
	}
	return int64(count - prev)
}

// name returns the NUL-terminated string at the start of b, interned.
func (d *Decoder) name(b []byte) string {
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	if s, ok := d.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.names) < maxNames {
		d.names[s] = s
	}
	return s
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// order reads integers in a byte order known at run time; unlike the
// binary.ByteOrder interface, its methods inline.
type order struct{ big bool }

func (o order) u16(b []byte) uint16 {
	if o.big {
		return binary.BigEndian.Uint16(b)
	}
	return binary.LittleEndian.Uint16(b)
}

func (o order) u32(b []byte) uint32 {
	if o.big {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

func (o order) u64(b []byte) uint64 {
	if o.big {
		return binary.BigEndian.Uint64(b)
	}
	return binary.LittleEndian.Uint64(b)
}

// i32 reads a pid or tid, which perf writes as u32 but means as s32 (-1 is
// no task).
func (o order) i32(b []byte) int { return int(int32(o.u32(b))) }

// cursor walks the fields of a sample.
type cursor struct {
	rec []byte
	p   int
	o   order
}

// has reports whether n more bytes follow.
func (c *cursor) has(n int) bool { return n >= 0 && n <= len(c.rec)-c.p }

// u64 reads the next u64; has(8) must be true.
func (c *cursor) u64() uint64 {
	v := c.o.u64(c.rec[c.p:])
	c.p += 8
	return v
}

// skip steps over n bytes, or reports false when fewer follow.
func (c *cursor) skip(n uint64) bool {
	if n > uint64(len(c.rec)-c.p) {
		return false
	}
	c.p += int(n)
	return true
}
