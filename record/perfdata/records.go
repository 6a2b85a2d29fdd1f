package perfdata

import "github.com/gprof-dev/gprof/event"

// decode turns one kernel record into events.
func (f *File) decode(typ uint32, misc uint16, rec []byte) {
	bo := f.bo
	switch typ {
	case recSample:
		f.sample(misc, rec)
	case recMmap, recMmap2:
		if m := f.mmap(typ, misc, rec); m != nil {
			f.add(m)
		}
	case recComm:
		body := f.body(rec)
		if len(body) < 8 {
			return
		}
		c := &event.Comm{
			Time: f.timeOf(rec),
			Pid:  int(int32(bo.Uint32(body))),
			Tid:  int(int32(bo.Uint32(body[4:]))),
			Name: cString(body[8:]),
			Exec: misc&miscCommExec != 0,
		}
		if c.Name == "perf-exec" && !c.Exec {
			// perf's child waiting to exec the workload: it becomes the
			// workload (whose exec names it), or with -p it is the
			// unprofiled command that times the recording.
			return
		}
		f.add(c)
	case recFork, recExit:
		if len(rec) < 32 {
			return
		}
		pid, ppid := int(int32(bo.Uint32(rec[8:]))), int(int32(bo.Uint32(rec[12:])))
		tid, ptid := int(int32(bo.Uint32(rec[16:]))), int(int32(bo.Uint32(rec[20:])))
		t := int64(bo.Uint64(rec[24:]))
		if t > 0 {
			f.lastTime = t
		} else {
			t = f.lastTime
		}
		if typ == recFork {
			f.add(&event.Fork{Time: t, Pid: pid, Tid: tid, Ppid: ppid, Ptid: ptid})
		} else {
			f.add(&event.Exit{Time: t, Pid: pid, Tid: tid})
		}
	case recLost:
		if len(rec) >= 24 {
			n := bo.Uint64(rec[16:])
			f.Lost += n
			f.add(&event.Lost{Time: f.timeOf(rec), Count: n})
		}
	case recLostSamples:
		if len(rec) >= 16 {
			n := bo.Uint64(rec[8:])
			f.Lost += n
			f.add(&event.Lost{Time: f.timeOf(rec), Count: n})
		}
	}
}

func (f *File) add(e event.Event) { f.Events = append(f.Events, e) }

// trailerLen is the size of the sample_id trailer non-sample records carry
// when the sampled event has sample_id_all; timeAt is the offset of the
// time in it, or -1.
func (f *File) trailer() (n, timeAt int) {
	a := &f.Attrs[f.Sampled]
	timeAt = -1
	if !a.SampleIDAll {
		return 0, -1
	}
	for _, bit := range []uint64{sampleTID, sampleTime, sampleID, sampleStreamID, sampleCPU, sampleIdentifier} {
		if a.SampleType&bit != 0 {
			if bit == sampleTime {
				timeAt = n
			}
			n += 8
		}
	}
	return n, timeAt
}

// body returns a non-sample record without its header and trailer.
func (f *File) body(rec []byte) []byte {
	n, _ := f.trailer()
	if len(rec) < 8+n {
		return nil
	}
	return rec[8 : len(rec)-n]
}

// timeOf returns a non-sample record's time from its trailer; records
// without one take the time of the record before, which keeps them in
// place when the events are ordered.
func (f *File) timeOf(rec []byte) int64 {
	n, at := f.trailer()
	if at >= 0 && len(rec) >= 8+n {
		if t := int64(f.bo.Uint64(rec[len(rec)-n+at:])); t > 0 {
			f.lastTime = t
			return t
		}
		return 0 // synthesized at the start, for what already ran
	}
	return f.lastTime
}

// mmap decodes MMAP (pid, tid, addr, len, pgoff, filename) and MMAP2 (the
// same, then device and inode or a build-id, prot, flags, filename) into
// a mapping of executable code in a process; it drops the kernel's (pid -1)
// and data mappings.
func (f *File) mmap(typ uint32, misc uint16, rec []byte) *event.Map {
	bo := f.bo
	body := f.body(rec)
	fixed := 32
	if typ == recMmap2 {
		fixed = 32 + 24 + 8
	}
	if len(body) < fixed {
		return nil
	}
	pid := int32(bo.Uint32(body))
	start, length, pgoff := bo.Uint64(body[8:]), bo.Uint64(body[16:]), bo.Uint64(body[24:])
	path := cString(body[fixed:])
	if pid == -1 || misc&miscCPUModeMask == miscKernel {
		if path == "[kernel.kallsyms]_text" || f.KernelMapStart == 0 && path == "[kernel.kallsyms]" {
			f.KernelMapStart = start
		}
		return nil
	}
	if misc&miscMmapData != 0 {
		return nil
	}
	m := &event.Map{
		Time: f.timeOf(rec), Pid: int(pid),
		Start: start, End: start + length, FileOffset: pgoff, Path: path,
	}
	if typ == recMmap2 {
		const protExec = 4
		if bo.Uint32(body[56:])&protExec == 0 {
			return nil
		}
		if misc&miscMmapBuildID != 0 {
			if n := int(body[32]); n > 0 && n <= 20 {
				m.BuildID = body[36 : 36+n]
			}
		} else {
			maj, min := bo.Uint32(body[32:]), bo.Uint32(body[36:])
			m.Dev = linuxDev(maj, min)
			m.Inode = bo.Uint64(body[40:])
		}
	}
	if m.BuildID == nil {
		m.BuildID = f.BuildIDs[path]
	}
	return m
}

// linuxDev encodes a device number the way Linux's makedev does, as
// stat(2) reports it.
func linuxDev(maj, min uint32) uint64 {
	M, m := uint64(maj), uint64(min)
	return M&0xfffff000<<32 | M&0xfff<<8 | m&0xffffff00<<12 | m&0xff
}

// sample decodes a SAMPLE record of the sampled event; the fields follow
// in sample_type bit order (perf_event_open(2)).
func (f *File) sample(misc uint16, rec []byte) {
	bo := f.bo
	ai := f.Sampled
	if len(f.Attrs) > 1 {
		var ok bool
		if ai, ok = f.sampleAttr(rec); !ok || ai != f.Sampled {
			f.OtherSamples++
			return
		}
	}
	a := &f.Attrs[ai]
	st := a.SampleType
	p := 8
	ok := true
	need := func(n int) bool {
		if n < 0 || p+n > len(rec) {
			ok = false
		}
		return ok
	}
	u64 := func() uint64 {
		if !need(8) {
			return 0
		}
		v := bo.Uint64(rec[p:])
		p += 8
		return v
	}
	s := &event.Sample{CPUDelta: -1}
	var ip uint64
	if st&sampleIdentifier != 0 {
		u64()
	}
	if st&sampleIP != 0 {
		ip = u64()
	}
	if st&sampleTID != 0 && need(8) {
		s.Pid = int(int32(bo.Uint32(rec[p:])))
		s.Tid = int(int32(bo.Uint32(rec[p+4:])))
		p += 8
	}
	if st&sampleTime != 0 {
		s.Time = int64(u64())
		f.lastTime = s.Time
	} else {
		s.Time = f.lastTime
	}
	for _, bit := range []uint64{sampleAddr, sampleID, sampleStreamID} {
		if st&bit != 0 {
			u64()
		}
	}
	if st&sampleCPU != 0 {
		s.CPU = int(uint32(u64()))
	}
	if st&samplePeriod != 0 {
		period := u64()
		if a.IsClock() {
			s.CPUDelta = int64(period)
		}
	} else if a.IsClock() && !a.Freq {
		s.CPUDelta = int64(a.Period) // -c: every sample is one period
	}
	if st&sampleRead != 0 {
		p += readSize(a.ReadFormat, rec, p, f)
	}
	if !ok {
		return
	}
	if st&sampleCallchain != 0 {
		nr := u64()
		if !ok || nr > uint64(len(rec)-p)/8 {
			return
		}
		stack := make([]uint64, 0, nr)
		kernel := 0
		ctx := ctxUser // the first marker says which; default to user
		for i := uint64(0); i < nr; i++ {
			v := bo.Uint64(rec[p:])
			p += 8
			if v >= ctxMax {
				ctx = v
				continue
			}
			if ctx == ctxKernel || ctx == ctxHV || ctx == ctxGuestKernel {
				if len(stack) != kernel {
					continue // kernel frame after user frames: malformed
				}
				kernel++
			}
			stack = append(stack, v)
		}
		if len(stack) == 0 {
			stack = append(stack, ip)
			if misc&miscCPUModeMask == miscKernel {
				kernel = 1
			}
		}
		s.Stack, s.KernelFrames = stack, kernel
	} else if st&sampleIP != 0 {
		s.Stack = []uint64{ip}
		if misc&miscCPUModeMask == miscKernel {
			s.KernelFrames = 1
		}
	}
	if st&sampleRaw != 0 {
		if !need(4) {
			f.keep(s)
			return
		}
		p += 4 + int(bo.Uint32(rec[p:]))
		// RAW data is padded so the next field is 8-byte aligned.
	}
	if st&sampleBranchStack != 0 {
		nr := u64()
		if a.BranchSampleType&(1<<17) != 0 { // PERF_SAMPLE_BRANCH_HW_INDEX
			u64()
		}
		if !ok || nr > uint64(len(rec))/24 {
			f.keep(s)
			return
		}
		p += 24 * int(nr)
	}
	if st&sampleRegsUser != 0 {
		abi := u64()
		if ok && abi != 0 && need(8*f.nregs) {
			at := func(i int) uint64 {
				if i < 0 {
					return 0
				}
				return bo.Uint64(rec[p+8*i:])
			}
			s.Regs = &event.Regs{IP: at(f.regsAt[0]), SP: at(f.regsAt[1]), FP: at(f.regsAt[2]), LR: at(f.lrAt), BX: at(f.bxAt)}
			p += 8 * f.nregs
			if s.Regs.IP == 0 || s.Regs.SP == 0 {
				s.Regs = nil // not the registers an unwinder needs
			}
		}
	}
	if st&sampleStackUser != 0 && ok {
		size := u64()
		if ok && size > 0 && size <= uint64(len(rec)-p) {
			data := rec[p : p+int(size)]
			p += int(size)
			dyn := u64()
			if ok && dyn < size {
				data = data[:dyn]
			}
			if ok && len(data) > 0 {
				s.StackCopy = data
			}
		}
	}
	if s.StackCopy == nil {
		s.Regs = nil // nothing to unwind: keep the kernel's chain
	}
	f.keep(s)
}

func (f *File) keep(s *event.Sample) {
	if len(s.Stack) == 0 && s.Regs == nil {
		return
	}
	f.Samples++
	f.add(s)
}

// readSize returns the size of a PERF_SAMPLE_READ value at rec[p:].
func readSize(rf uint64, rec []byte, p int, f *File) int {
	per := 8 // value
	if rf&readID != 0 {
		per += 8
	}
	if rf&readLost != 0 {
		per += 8
	}
	n := 0
	if rf&readTotalTimeEnabled != 0 {
		n += 8
	}
	if rf&readTotalTimeRunning != 0 {
		n += 8
	}
	if rf&readGroup == 0 {
		return n + per
	}
	if p+8 > len(rec) {
		return len(rec)
	}
	nr := f.bo.Uint64(rec[p:])
	if nr > uint64(len(rec)) {
		return len(rec)
	}
	return 8 + n + int(nr)*(per)
}

// sampleAttr finds which event a sample belongs to by its id: first in
// the record with PERF_SAMPLE_IDENTIFIER, else where PERF_SAMPLE_ID puts
// it (perf requires every event of a file to agree on that place).
func (f *File) sampleAttr(rec []byte) (int, bool) {
	st := f.Attrs[f.Sampled].SampleType
	p := 8
	switch {
	case st&sampleIdentifier != 0:
	case st&sampleID != 0:
		for _, bit := range []uint64{sampleIP, sampleTID, sampleTime, sampleAddr} {
			if st&bit != 0 {
				p += 8
			}
		}
	default:
		return f.Sampled, true // no ids: perf cannot tell them apart either
	}
	if p+8 > len(rec) {
		return 0, false
	}
	i, ok := f.ids[f.bo.Uint64(rec[p:])]
	return i, ok
}
