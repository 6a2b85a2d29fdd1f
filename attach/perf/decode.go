//go:build linux

package perf

import (
	"encoding/binary"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/attach/internal/proc"
	"github.com/gprof-dev/gprof/event"
)

// Decoding of perf ring records (kernel include/uapi/linux/perf_event.h).
// All events sharing a ring have the same attr, so one decoder per session
// knows the layout of every record it sees.

var ne = binary.NativeEndian

// Callchain context markers are the top 4095 values of u64.
const (
	ctxMax         = ^uint64(0xfff - 1) // PERF_CONTEXT_MAX (-4095)
	ctxHV          = ^uint64(0x20 - 1)  // -32
	ctxKernel      = ^uint64(0x80 - 1)  // -128
	ctxUser        = ^uint64(0x200 - 1) // -512
	ctxGuestKernel = ^uint64(0x880 - 1) // -2176
	ctxGuestUser   = ^uint64(0xa00 - 1) // -2560
)

// regsLayout says where the registers an unwinder needs sit in the
// REGS_USER array, which holds the mask's registers in ascending bit order.
type regsLayout struct {
	mask           uint64
	ip, sp, fp, lr int // index into the array; -1 when absent
	bx             int
	n              int // registers in the array
	// callee, when nCallee > 0, is the index of the first of nCallee
	// more registers (x86-64 r12-r15) for event.Sample.CalleeRegs.
	callee, nCallee int
}

// userRegs returns the REGS_USER layout for GOARCH, or false when dwarf
// call graphs are not supported there.
func userRegs(goarch string) (regsLayout, bool) {
	switch goarch {
	case "amd64":
		// arch/x86/include/uapi/asm/perf_regs.h: BX=1 BP=6 SP=7 IP=8.
		return regsLayout{mask: 1<<1 | 1<<6 | 1<<7 | 1<<8, bx: 0, fp: 1, sp: 2, ip: 3, lr: -1, n: 4}, true
	case "arm64":
		// arch/arm64/include/uapi/asm/perf_regs.h: X29=29 LR=30 SP=31 PC=32.
		return regsLayout{mask: 1<<29 | 1<<30 | 1<<31 | 1<<32, fp: 0, lr: 1, sp: 2, ip: 3, bx: -1, n: 4}, true
	}
	return regsLayout{}, false
}

// batch owns the events of one drain and the memory they point into, so a
// batch can be handed to the handler goroutine while the next one fills.
type batch struct {
	events  []event.Event
	samples []event.Sample // chunk; samples[nsamp:] free
	nsamp   int
	regs    []event.Regs
	nregs   int
	frames  []uint64
	bytes   []byte
	lost    uint64
	notices []string
}

func (b *batch) reset() {
	clear(b.events)
	b.events = b.events[:0]
	b.nsamp = 0
	b.nregs = 0
	b.frames = b.frames[:0]
	b.bytes = b.bytes[:0]
	b.lost = 0
	b.notices = b.notices[:0]
}

func (b *batch) newSample() *event.Sample { return nextInChunk(&b.samples, &b.nsamp) }
func (b *batch) newRegs() *event.Regs     { return nextInChunk(&b.regs, &b.nregs) }

// nextInChunk returns the next zeroed element of *chunk, *used of which are
// taken, starting a new chunk (twice as long, at least 256) when it is full.
// Elements handed out earlier stay in the old chunk, which stays valid.
func nextInChunk[T any](chunk *[]T, used *int) *T {
	if *used == len(*chunk) {
		*chunk = make([]T, max(2*len(*chunk), 256))
		*used = 0
	}
	e := &(*chunk)[*used]
	*used++
	var zero T
	*e = zero
	return e
}

// frameSlice returns n uint64s from the batch's frame arena. Growing the
// arena leaves slices handed out earlier pointing at the old array, which
// stays valid.
func (b *batch) frameSlice(n int) []uint64 {
	if len(b.frames)+n > cap(b.frames) {
		c := 2 * cap(b.frames)
		if c < 4096 {
			c = 4096
		}
		if c < n {
			c = n
		}
		b.frames = make([]uint64, 0, c)
	}
	start := len(b.frames)
	b.frames = b.frames[:start+n]
	return b.frames[start : start+n : start+n]
}

func (b *batch) byteSlice(src []byte) []byte {
	n := len(src)
	if len(b.bytes)+n > cap(b.bytes) {
		c := 2 * cap(b.bytes)
		if c < 1<<16 {
			c = 1 << 16
		}
		if c < n {
			c = n
		}
		b.bytes = make([]byte, 0, c)
	}
	start := len(b.bytes)
	b.bytes = append(b.bytes, src...)
	return b.bytes[start : start+n : start+n]
}

// maxInterpLate is how long after its sample (ns) a thread's Python
// stack may still be read (see decode).
const maxInterpLate = 3e6

// decoder turns raw records into events.
type decoder struct {
	sampleType uint64
	regs       regsLayout // used when sampleType has REGS_USER
	periodIsNs bool       // PERIOD is CPU ns (clock events in period mode)

	trailerLen  int // bytes of sample_id trailer on non-sample records
	trailerTime int // offset of time from the trailer start; -1 if none
	trailerTid  int // offset of pid, tid from the trailer start; -1 if none

	// filter, when set, keeps only the records of its targets (the
	// per-CPU layout's events see every task; see layout.go).
	filter *targets
	// dropped counts the samples filter dropped.
	dropped uint64

	// switchIDs names the events (by PERF_SAMPLE_IDENTIFIER) that sample
	// context switches for off-CPU stacks; their samples are Switch ones.
	switchIDs map[uint64]bool

	// statMaps fills Dev/Inode of MMAP2 records that carry a build-id
	// instead, by stat'ing the mapping; off in tests of hand-made records.
	statMaps bool
	// readArgv reads /proc/PID/cmdline on exec.
	readArgv bool

	throttled bool

	// interp is attach.Options.Interp; interpSeen is set once it found
	// an interpreter, from when the rings are read at once (see run).
	interp     func(pid, tid int, mem attach.Memory) any
	interpSeen bool

	// readCPU: samples carry their event's count (PERF_SAMPLE_READ, a
	// single value), the CPU time of the thread on the sample's CPU in
	// every mode, even where samples are user mode only. Each thread has
	// one event per CPU, so the previous count is kept per thread and CPU.
	readCPU bool
	counts  map[int][]uint64 // tid → count at its previous sample, by CPU
	// exited and exitedBefore hold threads that exited in this round of
	// drains and the one before: their counts are forgotten one full
	// round late, as samples they took on another CPU before exiting may
	// still sit in a ring drained later.
	exited, exitedBefore []int
	// noStack sums, over samples, the CPU time a sample's count shows
	// beyond its period: time spent where samples are not taken.
	noStack int64
}

// roundDone is called after each round of drains of every ring.
func (d *decoder) roundDone() {
	for _, tid := range d.exitedBefore {
		delete(d.counts, tid)
	}
	d.exitedBefore, d.exited = d.exited, d.exitedBefore[:0]
}

// cpuDelta returns the CPU time tid used on cpu since its previous sample
// there, given the event's count now.
func (d *decoder) cpuDelta(tid, cpu int, count uint64) int64 {
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

func newDecoder(sampleType uint64, regs regsLayout, periodIsNs bool) *decoder {
	d := &decoder{sampleType: sampleType, regs: regs, periodIsNs: periodIsNs, trailerTime: -1, trailerTid: -1, statMaps: true, readArgv: true}
	for _, bit := range []uint64{unix.PERF_SAMPLE_TID, unix.PERF_SAMPLE_TIME, unix.PERF_SAMPLE_ID, unix.PERF_SAMPLE_STREAM_ID, unix.PERF_SAMPLE_CPU, unix.PERF_SAMPLE_IDENTIFIER} {
		if sampleType&bit != 0 {
			switch bit {
			case unix.PERF_SAMPLE_TIME:
				d.trailerTime = d.trailerLen
			case unix.PERF_SAMPLE_TID:
				d.trailerTid = d.trailerLen
			}
			d.trailerLen += 8
		}
	}
	return d
}

// trailerTimeOf returns the time in a non-sample record's sample_id trailer.
func (d *decoder) trailerTimeOf(rec []byte) int64 {
	if d.trailerTime < 0 || len(rec) < 8+d.trailerLen {
		return 0
	}
	off := len(rec) - d.trailerLen + d.trailerTime
	return int64(ne.Uint64(rec[off:]))
}

// decode appends the events of one record to b. rec is only valid during
// the call; everything kept is copied into b.
func (d *decoder) decode(rec []byte, b *batch) {
	if len(rec) < 8 {
		return
	}
	typ := ne.Uint32(rec[0:])
	misc := ne.Uint16(rec[4:])
	switch typ {
	case unix.PERF_RECORD_SAMPLE:
		if s := d.decodeSample(rec, misc, b); s != nil {
			if d.interp != nil && !s.Switch {
				// The thread ran on since the sample: what it runs now
				// may not be what it ran then (event.Sample.InterpLate),
				// and the later, the likelier. Past maxInterpLate it is
				// not read at all: which samples that drops depends on
				// when gprof got a CPU, not on what the target ran.
				s.InterpLate = true
				if !d.interpSeen || event.Now()-s.Time <= maxInterpLate {
					s.Interp = d.interp(s.Pid, s.Tid, attach.ProcessMemory(s.Pid))
					d.interpSeen = d.interpSeen || s.Interp != nil
				}
			}
			b.events = append(b.events, s)
		}
	case unix.PERF_RECORD_MMAP2:
		if len(rec) >= 16 && d.filter != nil && !d.filter.keep(int(ne.Uint32(rec[8:])), int(ne.Uint32(rec[12:]))) {
			return
		}
		if m := d.decodeMmap2(rec, misc); m != nil {
			b.events = append(b.events, m)
		}
	case unix.PERF_RECORD_COMM:
		if len(rec) < 16+d.trailerLen {
			return
		}
		if d.filter != nil && !d.filter.keep(int(ne.Uint32(rec[8:])), int(ne.Uint32(rec[12:]))) {
			return
		}
		c := &event.Comm{
			Time: d.trailerTimeOf(rec),
			Pid:  int(ne.Uint32(rec[8:])),
			Tid:  int(ne.Uint32(rec[12:])),
			Name: cString(rec[16 : len(rec)-d.trailerLen]),
			Exec: misc&unix.PERF_RECORD_MISC_COMM_EXEC != 0,
		}
		if c.Exec && d.readArgv {
			c.Argv = proc.ReadCmdline(c.Pid)
		}
		b.events = append(b.events, c)
	case unix.PERF_RECORD_FORK, unix.PERF_RECORD_EXIT:
		if len(rec) < 32 {
			return
		}
		pid, ppid := int(ne.Uint32(rec[8:])), int(ne.Uint32(rec[12:]))
		tid, ptid := int(ne.Uint32(rec[16:])), int(ne.Uint32(rec[20:]))
		t := int64(ne.Uint64(rec[24:]))
		if d.filter != nil {
			if typ == unix.PERF_RECORD_FORK {
				d.filter.fork(pid, ppid)
			}
			if !d.filter.keep(pid, tid) {
				return
			}
		}
		if typ == unix.PERF_RECORD_FORK {
			b.events = append(b.events, &event.Fork{Time: t, Pid: pid, Tid: tid, Ppid: ppid, Ptid: ptid})
		} else {
			b.events = append(b.events, &event.Exit{Time: t, Pid: pid, Tid: tid})
			if d.readCPU {
				d.exited = append(d.exited, tid)
			}
		}
	case unix.PERF_RECORD_LOST:
		if len(rec) < 24 {
			return
		}
		n := ne.Uint64(rec[16:])
		b.lost += n
		b.events = append(b.events, &event.Lost{Time: d.trailerTimeOf(rec), Count: n})
	case unix.PERF_RECORD_LOST_SAMPLES:
		if len(rec) < 16 {
			return
		}
		n := ne.Uint64(rec[8:])
		b.lost += n
		b.events = append(b.events, &event.Lost{Time: d.trailerTimeOf(rec), Count: n})
	case unix.PERF_RECORD_THROTTLE:
		d.throttled = true
	case unix.PERF_RECORD_SWITCH, unix.PERF_RECORD_SWITCH_CPU_WIDE:
		// The sample_id trailer names the task switched out or in (a
		// per-CPU event's record also names the task on the other side
		// of the switch, which is not needed).
		if d.trailerTid < 0 || len(rec) < 8+d.trailerLen {
			return
		}
		off := len(rec) - d.trailerLen + d.trailerTid
		pid, tid := int(ne.Uint32(rec[off:])), int(ne.Uint32(rec[off+4:]))
		if d.filter != nil && !d.filter.keep(pid, tid) {
			return
		}
		b.events = append(b.events, &event.Switch{
			Time:    d.trailerTimeOf(rec),
			Pid:     pid,
			Tid:     tid,
			Out:     misc&unix.PERF_RECORD_MISC_SWITCH_OUT != 0,
			Preempt: misc&unix.PERF_RECORD_MISC_SWITCH_OUT_PREEMPT != 0,
		})
	}
}

func (d *decoder) decodeSample(rec []byte, misc uint16, b *batch) *event.Sample {
	st := d.sampleType
	p := 8
	need := func(n int) bool { return p+n <= len(rec) }
	u64 := func() uint64 { v := ne.Uint64(rec[p:]); p += 8; return v }
	s := b.newSample()
	s.CPUDelta = -1
	s.InKernel = misc&unix.PERF_RECORD_MISC_CPUMODE_MASK == unix.PERF_RECORD_MISC_KERNEL
	var ip uint64
	if st&unix.PERF_SAMPLE_IDENTIFIER != 0 {
		if !need(8) {
			return nil
		}
		s.Switch = d.switchIDs[u64()]
	}
	if st&unix.PERF_SAMPLE_IP != 0 {
		if !need(8) {
			return nil
		}
		ip = u64()
	}
	if st&unix.PERF_SAMPLE_TID != 0 {
		if !need(8) {
			return nil
		}
		s.Pid = int(ne.Uint32(rec[p:]))
		s.Tid = int(ne.Uint32(rec[p+4:]))
		p += 8
		if d.filter != nil && !d.filter.keep(s.Pid, s.Tid) {
			// Another process's, seen by a per-CPU event: given back
			// before anything is copied.
			b.nsamp--
			d.dropped++
			return nil
		}
	}
	if st&unix.PERF_SAMPLE_TIME != 0 {
		if !need(8) {
			return nil
		}
		s.Time = int64(u64())
	}
	for _, bit := range []uint64{unix.PERF_SAMPLE_ADDR, unix.PERF_SAMPLE_ID, unix.PERF_SAMPLE_STREAM_ID} {
		if st&bit != 0 {
			p += 8
		}
	}
	if st&unix.PERF_SAMPLE_CPU != 0 {
		if !need(8) {
			return nil
		}
		s.CPU = int(ne.Uint32(rec[p:]))
		p += 8
	}
	if st&unix.PERF_SAMPLE_PERIOD != 0 {
		if !need(8) {
			return nil
		}
		period := u64()
		if s.Switch {
			s.CPUDelta = 0 // a count of switches, not of time
		} else if d.periodIsNs {
			s.CPUDelta = int64(period)
		}
	}
	if st&unix.PERF_SAMPLE_READ != 0 {
		// read_format 0: the event's value alone.
		if !need(8) {
			return nil
		}
		count := u64()
		if d.readCPU && !s.Switch {
			if delta := d.cpuDelta(s.Tid, s.CPU, count); delta >= 0 {
				if s.CPUDelta >= 0 {
					d.noStack += delta - s.CPUDelta
				}
				s.CPUDelta = delta
			}
		}
	}
	if st&unix.PERF_SAMPLE_CALLCHAIN != 0 {
		if !need(8) {
			return nil
		}
		nr := int(u64())
		if nr < 0 || !need(8*nr) {
			return nil
		}
		chain := rec[p : p+8*nr]
		p += 8 * nr
		// One pass: frames go into an arena slice sized for the whole
		// chain; markers only switch the context.
		stack := b.frameSlice(nr)
		k, kernel := 0, 0
		ctx := ctxUser // the first marker says which; default to user
		for len(chain) >= 8 {
			v := ne.Uint64(chain)
			chain = chain[8:]
			if v >= ctxMax {
				ctx = v
				continue
			}
			if ctx == ctxKernel || ctx == ctxHV || ctx == ctxGuestKernel {
				if k != kernel {
					continue // kernel frame after user frames: malformed
				}
				kernel++
			}
			stack[k] = v
			k++
		}
		if k == 0 && s.InKernel {
			// A kernel address without its kernel stack is no frame.
			stack = stack[:0]
		} else if k == 0 {
			stack = stack[:0]
			if cap(stack) > 0 {
				stack = stack[:1]
			} else {
				stack = b.frameSlice(1)
			}
			stack[0] = ip
			k = 1
		}
		s.Stack = stack[:k]
		s.KernelFrames = kernel
	} else if st&unix.PERF_SAMPLE_IP != 0 && !s.InKernel {
		s.Stack = b.frameSlice(1)
		s.Stack[0] = ip
	}
	if st&unix.PERF_SAMPLE_RAW != 0 {
		if !need(4) {
			return s
		}
		n := int(ne.Uint32(rec[p:]))
		p += 4 + n
	}
	if st&unix.PERF_SAMPLE_REGS_USER != 0 {
		if !need(8) {
			return s
		}
		abi := u64()
		if abi != unix.PERF_SAMPLE_REGS_ABI_NONE {
			if !need(8 * d.regs.n) {
				return s
			}
			r := b.newRegs()
			at := func(i int) uint64 {
				if i < 0 {
					return 0
				}
				return ne.Uint64(rec[p+8*i:])
			}
			r.IP, r.SP, r.FP, r.LR, r.BX = at(d.regs.ip), at(d.regs.sp), at(d.regs.fp), at(d.regs.lr), at(d.regs.bx)
			if d.regs.nCallee > 0 {
				s.CalleeRegs = make([]uint64, d.regs.nCallee)
				for i := range s.CalleeRegs {
					s.CalleeRegs[i] = at(d.regs.callee + i)
				}
			}
			p += 8 * d.regs.n
			s.Regs = r
		}
	}
	if st&unix.PERF_SAMPLE_STACK_USER != 0 {
		if !need(8) {
			return s
		}
		size := int(u64())
		if size > 0 {
			if !need(size + 8) {
				return s
			}
			data := rec[p : p+size]
			p += size
			dyn := int(u64())
			if dyn > size {
				dyn = size
			}
			if dyn > 0 {
				s.StackCopy = b.byteSlice(data[:dyn])
			}
		}
	}
	return s
}

// MMAP2 body: pid u32, tid u32, addr, len, pgoff u64; then either maj u32,
// min u32, ino u64, ino_generation u64 or build_id_size u8, 3 bytes pad,
// build_id[20]; then prot u32, flags u32, filename.
func (d *decoder) decodeMmap2(rec []byte, misc uint16) *event.Map {
	const fixed = 8 + 8 + 24 + 24 + 8
	if len(rec) < fixed+d.trailerLen {
		return nil
	}
	prot := ne.Uint32(rec[64:])
	if prot&unix.PROT_EXEC == 0 {
		return nil
	}
	m := &event.Map{
		Time:       d.trailerTimeOf(rec),
		Pid:        int(ne.Uint32(rec[8:])),
		Start:      ne.Uint64(rec[16:]),
		FileOffset: ne.Uint64(rec[32:]),
		Path:       cString(rec[fixed : len(rec)-d.trailerLen]),
	}
	m.End = m.Start + ne.Uint64(rec[24:])
	m.MapFile = proc.MapFilePath(m.Pid, m.Start, m.End)
	if misc&unix.PERF_RECORD_MISC_MMAP_BUILD_ID != 0 {
		n := int(rec[40])
		if n > 20 {
			n = 20
		}
		if n > 0 {
			m.BuildID = append([]byte(nil), rec[44:44+n]...)
		}
		if d.statMaps {
			m.Dev, m.Inode = statMapping(m.MapFile, m.Path)
		}
	} else {
		maj, min := ne.Uint32(rec[40:]), ne.Uint32(rec[44:])
		m.Dev = unix.Mkdev(maj, min)
		m.Inode = ne.Uint64(rec[48:])
	}
	return m
}

// statMapping finds the device and inode of a mapping whose MMAP2 record
// carried a build-id instead: through map_files while the process lives,
// else the path (which may since have been replaced).
func statMapping(mapFile, path string) (dev, ino uint64) {
	var st unix.Stat_t
	if unix.Stat(mapFile, &st) == nil {
		return st.Dev, st.Ino
	}
	if strings.HasPrefix(path, "/") && unix.Stat(path, &st) == nil {
		return st.Dev, st.Ino
	}
	return 0, 0
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
