package perfrecord

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"

	"github.com/gprof-dev/gprof/event"
)

// trailer writes the sample_id trailer of fpSampleType's records: pid/tid,
// time, cpu.
func (r *recBuf) trailer(pid, tid int, time uint64) *recBuf {
	return r.task(pid, tid).u64(time, 1)
}

func TestDecodeSample(t *testing.T) {
	forEachOrder(t, func(t *testing.T, bo byteOrder) {
		d := NewDecoder(bo, liveFormat(fpSampleType))
		evs := decodeAll(d, &Arena{}, fpSample(bo, MiscUser, 3, 1e6, 0x401000, 0x401010, 0x401020))
		if len(evs) != 1 {
			t.Fatalf("%d events", len(evs))
		}
		s := evs[0].(*event.Sample)
		if s.Pid != 1234 || s.Tid != 1235 || s.Time != 1e9 || s.CPU != 3 || s.CPUDelta != 1e6 || s.KernelFrames != 0 || s.InKernel ||
			fmt.Sprint(s.Stack) != fmt.Sprint([]uint64{0x401000, 0x401010, 0x401020}) {
			t.Errorf("decoded %+v", s)
		}
	})
}

// A sample taken in kernel mode without its kernel stack says so, and
// keeps the user stack that entered the kernel, never the kernel IP. With
// KernelIP (perf.data) the IP is its kernel frame instead when it has no
// frames; kernel frames in the chain come first.
func TestDecodeKernelModeSample(t *testing.T) {
	forEachOrder(t, func(t *testing.T, bo byteOrder) {
		d := NewDecoder(bo, liveFormat(fpSampleType))
		evs := decodeAll(d, &Arena{},
			fpSample(bo, MiscKernel, 1, 1e6, 0x401000, 0x401010),
			fpSample(bo, MiscKernel, 1, 1e6),
			fpSample(bo, MiscUser, 1, 1e6, 0x401000))
		if len(evs) != 3 {
			t.Fatalf("%d events", len(evs))
		}
		s := evs[0].(*event.Sample)
		if !s.InKernel || s.KernelFrames != 0 || fmt.Sprint(s.Stack) != fmt.Sprint([]uint64{0x401000, 0x401010}) || s.CPUDelta != 1e6 {
			t.Errorf("kernel-mode sample decoded as %+v", s)
		}
		if s := evs[1].(*event.Sample); !s.InKernel || len(s.Stack) != 0 {
			t.Errorf("kernel-mode sample with no user chain decoded as %+v; want no frames", s)
		}
		if s := evs[2].(*event.Sample); s.InKernel {
			t.Errorf("user-mode sample decoded as in the kernel: %+v", s)
		}

		d.KernelIP = true
		withKernel := newRec(bo, RecordSample, MiscKernel).u64(0xffffffff81234567).task(1234, 1235).u64(1e9).cpu(1).u64(1e6).
			u64(5, ContextKernel, 0xffffffff81234567, 0xffffffff81000000, ContextUser, 0x401000).done()
		evs = decodeAll(d, &Arena{}, fpSample(bo, MiscKernel, 1, 1e6), withKernel)
		if s := evs[0].(*event.Sample); s.KernelFrames != 1 || fmt.Sprint(s.Stack) != fmt.Sprint([]uint64{0xffffffff81234567}) {
			t.Errorf("KernelIP: a kernel-mode sample without frames decoded as %+v; want its IP as kernel frame", s)
		}
		if s := evs[1].(*event.Sample); s.KernelFrames != 2 || fmt.Sprint(s.Stack) != fmt.Sprint([]uint64{0xffffffff81234567, 0xffffffff81000000, 0x401000}) {
			t.Errorf("a sample with kernel frames decoded as %+v", s)
		}
	})
}

// A kernel frame after user frames is malformed and left out; the markers
// are no frames.
func TestDecodeCallchainMarkers(t *testing.T) {
	bo := binary.LittleEndian
	d := NewDecoder(bo, liveFormat(fpSampleType))
	rec := newRec(bo, RecordSample, MiscUser).u64(0x401000).task(1, 1).u64(1e9, 0, 1e6).
		u64(6, ContextUser, 0x401000, ContextKernel, 0xffffffff81000000, ContextUser, 0x401100).done()
	s := d.Decode(rec, &Arena{}).(*event.Sample)
	if s.KernelFrames != 0 || fmt.Sprint(s.Stack) != fmt.Sprint([]uint64{0x401000, 0x401100}) {
		t.Errorf("decoded %+v", s)
	}
}

// With ReadCPU each sample's CPU delta is the growth of its event's count
// (which runs in kernel mode too) since the thread's previous sample on
// the same CPU, and the excess over the period is time with no stack. A
// thread's counts are forgotten a full round after it exits.
func TestDecodeSampleReadCPU(t *testing.T) {
	forEachOrder(t, func(t *testing.T, bo byteOrder) {
		st := uint64(fpSampleType | SampleRead)
		d := NewDecoder(bo, liveFormat(st))
		d.ReadCPU = true
		var deltas []int64
		for _, r := range []struct {
			cpu   int
			count uint64
		}{{1, 1e6}, {1, 5e6}, {0, 2e6}, {1, 6e6}} {
			rec := newRec(bo, RecordSample, MiscUser).u64(0x401000).task(1234, 1235).u64(1e9).cpu(r.cpu).u64(1e6, r.count).
				u64(2, ContextUser, 0x401000).done()
			deltas = append(deltas, d.Decode(rec, &Arena{}).(*event.Sample).CPUDelta)
		}
		if fmt.Sprint(deltas) != fmt.Sprint([]int64{1e6, 4e6, 2e6, 1e6}) {
			t.Errorf("CPU deltas %v, want [1ms 4ms 2ms 1ms] in ns", deltas)
		}
		if d.NoStack != 4e6 {
			t.Errorf("no-stack time %d ns, want 4ms", d.NoStack)
		}

		exit := newRec(bo, RecordExit, 0).task(1234, 1234).task(1235, 1234).u64(2e9).trailer(1234, 1235, 2e9).done()
		if _, ok := d.Decode(exit, &Arena{}).(*event.Exit); !ok {
			t.Fatal("exit not decoded")
		}
		d.RoundDone()
		if d.counts[1235] == nil {
			t.Fatal("counts forgotten in the round of the exit; samples from other rings may follow")
		}
		d.RoundDone()
		if d.counts[1235] != nil {
			t.Error("counts of an exited thread kept")
		}
	})
}

// TestDecodeSideband checks the records other than samples against
// hand-made ones.
func TestDecodeSideband(t *testing.T) {
	forEachOrder(t, func(t *testing.T, bo byteOrder) {
		d := NewDecoder(bo, liveFormat(fpSampleType))
		buildID := make([]byte, 20)
		for i := range buildID {
			buildID[i] = byte(i)
		}
		evs := decodeAll(d, &Arena{},
			newRec(bo, RecordLost, 0).u64(99, 12).trailer(7, 8, 5555).done(),
			newRec(bo, RecordLostSamples, 0).u64(3).trailer(7, 8, 5556).done(),
			newRec(bo, RecordMmap2, MiscMmapBuildID).task(7, 8).u64(0x1000, 0x2000, 0x3000).
				raw([]byte{20, 0, 0, 0}).raw(buildID).u32(1|protExec, 2).str("/usr/bin/x").trailer(7, 8, 5557).done(),
			newRec(bo, RecordMmap2, 0).task(7, 8).u64(0x1000, 0x2000, 0).u32(8, 1).u64(4242, 0).
				u32(1, 2).str("/data").trailer(7, 8, 5558).done(), // not executable: dropped
			newRec(bo, RecordMmap2, 0).task(7, 8).u64(0x5000, 0x1000, 0x2000).u32(259, 0x12345).u64(4242, 0).
				u32(1|protExec, 2).str("/usr/lib/y.so").trailer(7, 8, 5559).done(),
			newRec(bo, RecordComm, MiscCommExec).task(7, 8).str("newname").trailer(7, 8, 5560).done(),
			newRec(bo, RecordFork, 0).task(7, 7).task(9, 8).u64(6666).trailer(7, 9, 6666).done(),
			newRec(bo, RecordExit, 0).task(7, 7).task(9, 9).u64(6667).trailer(7, 9, 6667).done(),
			newRec(bo, RecordThrottle, 0).u64(6668, 1, 2).trailer(7, 9, 6668).done(),
		)
		want := []event.Event{
			&event.Lost{Time: 5555, Count: 12},
			&event.Lost{Time: 5556, Count: 3},
			&event.Map{Time: 5557, Pid: 7, Tid: 8, Start: 0x1000, End: 0x3000, FileOffset: 0x3000, Path: "/usr/bin/x", BuildID: buildID},
			&event.Map{Time: 5559, Pid: 7, Tid: 8, Start: 0x5000, End: 0x6000, FileOffset: 0x2000, Path: "/usr/lib/y.so",
				Dev: 0x123<<20 | 259<<8 | 0x45, Inode: 4242}, // makedev(259, 0x12345)
			&event.Comm{Time: 5560, Pid: 7, Tid: 8, Name: "newname", Exec: true},
			&event.Fork{Time: 6666, Pid: 7, Tid: 9, Ppid: 7, Ptid: 8},
			&event.Exit{Time: 6667, Pid: 7, Tid: 9},
		}
		if !reflect.DeepEqual(evs, want) {
			t.Errorf("decoded\n%s\nwant\n%s", dump(evs), dump(want))
		}
		if !d.Throttled {
			t.Error("THROTTLE not noted")
		}
	})
}

// dump prints events with the values their pointers point to.
func dump(evs []event.Event) string {
	var b bytes.Buffer
	for _, e := range evs {
		fmt.Fprintf(&b, "%T %+v\n", e, reflect.ValueOf(e).Elem().Interface())
	}
	return b.String()
}

// TestDecodeSwitch: context-switch records name the task from their
// trailer and say out, and preempted; samples of the switch event (by
// identifier) are Switch samples that used no CPU.
func TestDecodeSwitch(t *testing.T) {
	forEachOrder(t, func(t *testing.T, bo byteOrder) {
		st := uint64(SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleCPU | SamplePeriod)
		d := NewDecoder(bo, liveFormat(st))
		d.SwitchIDs = map[uint64]bool{77: true}
		// trailer: pid/tid, time, cpu, identifier
		sw := func(typ uint32, misc uint16) []byte {
			return newRec(bo, typ, misc).task(7, 8).u64(5555, 1, 77).done()
		}
		smp := func(id, period uint64) []byte {
			return newRec(bo, RecordSample, MiscUser).u64(id, 0x4000).task(7, 8).u64(6000).cpu(1).u64(period).done()
		}
		evs := decodeAll(d, &Arena{},
			sw(RecordSwitch, MiscSwitchOut),
			sw(RecordSwitch, MiscSwitchOut|MiscSwitchOutPreempt),
			sw(RecordSwitchCPUWide, 0),
			smp(77, 1),
			smp(5, 1000000))
		if len(evs) != 5 {
			t.Fatalf("%d events: %s", len(evs), dump(evs))
		}
		want := []event.Switch{{Time: 5555, Pid: 7, Tid: 8, Out: true}, {Time: 5555, Pid: 7, Tid: 8, Out: true, Preempt: true}, {Time: 5555, Pid: 7, Tid: 8}}
		for i, w := range want {
			if got := *evs[i].(*event.Switch); got != w {
				t.Errorf("switch %d: %+v, want %+v", i, got, w)
			}
		}
		if s := evs[3].(*event.Sample); !s.Switch || s.CPUDelta != 0 || s.Tid != 8 || len(s.Stack) != 1 {
			t.Errorf("switch sample %+v", s)
		}
		if s := evs[4].(*event.Sample); s.Switch || s.CPUDelta != 1000000 {
			t.Errorf("clock sample %+v", s)
		}
	})
}

// pids keeps the tasks of its processes and of those they start.
type pids struct {
	keep  map[int]bool
	asked []string
}

func (p *pids) Keep(pid, tid int) bool {
	p.asked = append(p.asked, fmt.Sprintf("keep %d/%d", pid, tid))
	return p.keep[pid]
}

func (p *pids) Fork(pid, ppid int) {
	p.asked = append(p.asked, fmt.Sprintf("fork %d<-%d", pid, ppid))
	if p.keep[ppid] {
		p.keep[pid] = true
	}
}

// A Filter drops the records of other tasks; a sample of one costs no
// arena memory, and a FORK is told to the filter before it is asked.
func TestDecodeFilter(t *testing.T) {
	bo := binary.LittleEndian
	d := NewDecoder(bo, liveFormat(fpSampleType))
	f := &pids{keep: map[int]bool{1234: true}}
	d.Filter = f
	a := &Arena{}
	other := newRec(bo, RecordSample, MiscUser).u64(0x401000).task(99, 99).u64(1e9, 0, 1e6).u64(2, ContextUser, 0x401000).done()
	evs := decodeAll(d, a,
		other,
		fpSample(bo, MiscUser, 0, 1e6, 0x401000),
		newRec(bo, RecordComm, 0).task(99, 99).str("other").trailer(99, 99, 5).done(),
		newRec(bo, RecordMmap2, 0).task(99, 99).u64(0x1000, 0x1000, 0).u32(8, 1).u64(1, 0).u32(protExec, 2).str("/x").trailer(99, 99, 5).done(),
		newRec(bo, RecordSwitch, MiscSwitchOut).trailer(99, 99, 5).done(),
		newRec(bo, RecordFork, 0).task(1300, 1234).task(1300, 1235).u64(7).trailer(1300, 1300, 7).done(),
		newRec(bo, RecordFork, 0).task(1301, 99).task(1301, 99).u64(8).trailer(1301, 1301, 8).done(),
		other,
	)
	if len(evs) != 2 || d.Dropped != 2 {
		t.Fatalf("%d events, %d samples dropped: %s", len(evs), d.Dropped, dump(evs))
	}
	if s := evs[0].(*event.Sample); s.Pid != 1234 {
		t.Errorf("kept %+v", s)
	}
	if fk := evs[1].(*event.Fork); fk.Pid != 1300 {
		t.Errorf("kept %+v", fk)
	}
	if a.samples.used != 1 || len(a.frames) != 2 {
		t.Errorf("arena holds %d samples and %d frames, want the kept one's alone (its chain, marker included)", a.samples.used, len(a.frames))
	}
	if fmt.Sprint(f.asked[5:]) != "[fork 1300<-1234 keep 1300/1300 fork 1301<-99 keep 1301/1301 keep 99/99]" {
		t.Errorf("filter asked %q", f.asked)
	}
}

// A dwarf sample's registers come from where the layout puts them, and its
// stack copy is the dynamic part of what the kernel copied: copied into
// the arena, or borrowed from the record.
func TestDecodeRegsAndStack(t *testing.T) {
	forEachOrder(t, func(t *testing.T, bo byteOrder) {
		f := liveFormat(dwarfSampleType)
		f.Regs = UserRegs("amd64", 1<<RegX86BX|1<<RegX86BP|1<<RegX86SP|1<<RegX86IP|0xf<<RegX86R12)
		f.Regs.Callee, f.Regs.NCallee = f.Regs.Index(RegX86R12), 4
		d := NewDecoder(bo, f)
		stack := make([]byte, 64)
		for i := range stack {
			stack[i] = byte(i)
		}
		rec := newRec(bo, RecordSample, MiscUser).u64(0x401000).task(1234, 1235).u64(1e9, 0, 1e6).
			u64(2, ContextUser, 0x401000).
			u64(2, 0xb, 0xb9, 0x5f8, 0x401000, 12, 13, 14, 15). // abi, bx bp sp ip r12-r15
			u64(64).raw(stack).u64(40).done()
		for _, borrow := range []bool{false, true} {
			a := &Arena{Borrow: borrow}
			s := d.Decode(rec, a).(*event.Sample)
			if s.Regs == nil || *s.Regs != (event.Regs{IP: 0x401000, SP: 0x5f8, FP: 0xb9, BX: 0xb}) ||
				fmt.Sprint(s.CalleeRegs) != "[12 13 14 15]" || !bytes.Equal(s.StackCopy, stack[:40]) || s.NoUserRegs {
				t.Fatalf("borrow %v: decoded %+v, regs %+v", borrow, s, s.Regs)
			}
			inRec := &s.StackCopy[0] == &rec[len(rec)-8-64]
			if inRec != borrow {
				t.Errorf("borrow %v: stack copy in the record %v", borrow, inRec)
			}
		}

		// A sample without user registers (a kernel thread's, or a task's
		// in its exit) has none, and says so.
		rec = newRec(bo, RecordSample, MiscKernel).u64(0xffffffff81000000).task(2, 2).u64(1e9, 0, 1e6).
			u64(0).u64(RegsABINone).u64(0).done()
		if s := d.Decode(rec, &Arena{}).(*event.Sample); s.Regs != nil || s.StackCopy != nil || !s.NoUserRegs {
			t.Errorf("decoded %+v", s)
		}
	})
}

func TestUserRegs(t *testing.T) {
	x86 := uint64(1<<RegX86BX | 1<<RegX86BP | 1<<RegX86SP | 1<<RegX86IP)
	arm := uint64(1<<RegARM64X29 | 1<<RegARM64LR | 1<<RegARM64SP | 1<<RegARM64PC)
	for _, c := range []struct {
		arch string
		mask uint64
		want RegsLayout
	}{
		{"amd64", x86, RegsLayout{Mask: x86, N: 4, BX: 0, FP: 1, SP: 2, IP: 3, LR: -1}},
		{"x86_64", x86, RegsLayout{Mask: x86, N: 4, BX: 0, FP: 1, SP: 2, IP: 3, LR: -1}},
		{"", 0xff0fff, RegsLayout{Mask: 0xff0fff, N: 20, BX: 1, FP: 6, SP: 7, IP: 8, LR: -1}}, // perf's default x86-64 mask
		{"arm64", arm, RegsLayout{Mask: arm, N: 4, FP: 0, LR: 1, SP: 2, IP: 3, BX: -1}},
		{"aarch64", 1<<33 - 1, RegsLayout{Mask: 1<<33 - 1, N: 33, FP: 29, LR: 30, SP: 31, IP: 32, BX: -1}},
		{"arm64", 0, RegsLayout{IP: -1, SP: -1, FP: -1, LR: -1, BX: -1}},
	} {
		if got := UserRegs(c.arch, c.mask); got != c.want {
			t.Errorf("UserRegs(%q, %#x) = %+v, want %+v", c.arch, c.mask, got, c.want)
		}
	}
}

// What perf.data files have and rings do not: samples without a time or a
// period, READ values of groups, branch stacks, MMAP records, the kernel's
// mapping, events told apart by id.
func TestDecodeFileRecords(t *testing.T) {
	forEachOrder(t, func(t *testing.T, bo byteOrder) {
		st := uint64(SampleIdentifier | SampleIP | SampleTID | SampleCPU | SampleRead | SampleCallchain | SampleRaw | SampleBranchStack)
		d := NewDecoder(bo, Format{SampleType: st, SampleIDAll: true, PeriodIsTime: true, Period: 250000,
			ReadFormat: ReadGroup | ReadID | ReadTotalTimeEnabled, BranchSampleType: BranchHWIndex})
		d.KernelIP = true
		// Trailer: pid/tid, cpu, identifier.
		kernel := newRec(bo, RecordMmap, MiscKernel).task(-1, 0).u64(0xffffffff81000000, 0x1000000, 0).
			str("[kernel.kallsyms]_text").task(-1, 0).u64(0, 0).done()
		mmap := newRec(bo, RecordMmap, MiscUser).task(5, 5).u64(0x400000, 0x1000, 0).str("/bin/v1").task(5, 5).u64(0, 0).done()
		data := newRec(bo, RecordMmap, MiscUser|MiscMmapData).task(5, 5).u64(0x600000, 0x1000, 0).str("/data").task(5, 5).u64(0, 0).done()
		fork := newRec(bo, RecordFork, 0).task(5, 5).task(6, 5).u64(3000).task(5, 6).u64(0, 0).done()
		exit := newRec(bo, RecordExit, 0).task(5, 5).task(6, 6).u64(0).task(5, 6).u64(0, 0).done()
		sample := newRec(bo, RecordSample, MiscUser).u64(42, 0x400100).task(5, 6).cpu(1).
			u64(2, 100, 7, 42, 8, 43). // group read: nr, time enabled, {value, id} × 2
			u64(3, ContextUser, 0x400100, 0x400200).
			u32(12).raw(make([]byte, 12)).              // raw data, padded to 8 bytes
			u64(1, 0).u64(0x400100, 0x400300, 0).done() // branch stack: nr, hw_idx, one entry
		evs := decodeAll(d, &Arena{}, kernel, mmap, data, fork, sample, exit)
		want := []event.Event{
			&event.Map{Pid: 5, Tid: 5, Start: 0x400000, End: 0x401000, Path: "/bin/v1"},
			&event.Fork{Time: 3000, Pid: 5, Tid: 6, Ppid: 5, Ptid: 5},
			&event.Sample{Time: 3000, Pid: 5, Tid: 6, CPU: 1, CPUDelta: 250000, Stack: []uint64{0x400100, 0x400200}},
			&event.Exit{Time: 3000, Pid: 5, Tid: 6},
		}
		if !reflect.DeepEqual(evs, want) {
			t.Errorf("decoded\n%s\nwant\n%s", dump(evs), dump(want))
		}
		if d.KernelStart != 0xffffffff81000000 {
			t.Errorf("kernel at %#x", d.KernelStart)
		}
		if id, ok := d.SampleID(sample); !ok || id != 42 {
			t.Errorf("sample id %d, %v", id, ok)
		}

		// Where the id is PERF_SAMPLE_ID, it follows ip, tid, time, addr.
		d = NewDecoder(bo, Format{SampleType: SampleIP | SampleTID | SampleTime | SampleID | SampleCallchain})
		rec := newRec(bo, RecordSample, MiscUser).u64(0x400100).task(5, 6).u64(1, 42, 0).done()
		if id, ok := d.SampleID(rec); !ok || id != 42 {
			t.Errorf("sample id %d, %v", id, ok)
		}
		if id, ok := d.SampleID(rec[:24]); ok {
			t.Errorf("the id of a short record: %d", id)
		}
	})
}

// Cut short anywhere, a record is no event or one with what came before
// the cut, never a panic; a sample cut before the end of its call chain
// is none.
func TestDecodeTruncated(t *testing.T) {
	bo := binary.LittleEndian
	f := liveFormat(dwarfSampleType | SampleRead | SampleRaw | SampleBranchStack)
	f.Regs = UserRegs("amd64", 1<<RegX86BX|1<<RegX86BP|1<<RegX86SP|1<<RegX86IP)
	d := NewDecoder(bo, f)
	chainEnd := 8 + 6*8 + 3*8
	sample := newRec(bo, RecordSample, MiscUser).u64(0x401000).task(1, 1).u64(1e9, 0, 1e6, 5e5).
		u64(2, ContextUser, 0x401000).u32(4).raw([]byte{1, 2, 3, 4}).u64(0).
		u64(2, 1, 2, 3, 4).u64(16).raw(make([]byte, 16)).u64(16).done()
	for n := range len(sample) {
		cut := bytes.Clone(sample[:n])
		e := d.Decode(cut, &Arena{})
		if (e == nil) != (n < chainEnd) {
			t.Errorf("a sample cut at %d decodes to %v", n, e)
		}
	}
	for _, rec := range [][]byte{
		newRec(bo, RecordMmap2, 0).task(7, 8).u64(0x1000, 0x2000, 0).u32(8, 1).u64(4242, 0).u32(protExec, 2).str("/x").trailer(7, 8, 1).done(),
		newRec(bo, RecordComm, 0).task(7, 8).str("name").trailer(7, 8, 1).done(),
		newRec(bo, RecordFork, 0).task(7, 7).task(9, 8).u64(1).trailer(7, 9, 1).done(),
		newRec(bo, RecordLost, 0).u64(1, 2).trailer(7, 8, 1).done(),
		newRec(bo, RecordSwitch, 0).trailer(7, 8, 1).done(),
	} {
		for n := range len(rec) {
			d.Decode(bytes.Clone(rec[:n]), &Arena{})
		}
	}
}

// RecordTime finds the time of a sample, of a FORK, and of a side-band
// record in its trailer, as Decode would, without decoding.
func TestRecordTime(t *testing.T) {
	forEachOrder(t, func(t *testing.T, bo byteOrder) {
		d := NewDecoder(bo, liveFormat(fpSampleType))
		recs := map[string][]byte{
			"sample": fpSample(bo, MiscUser, 3, 1e6, 0x401000),
			"fork":   newRec(bo, RecordFork, 0).task(7, 7).task(9, 8).u64(6666).trailer(7, 9, 6666).done(),
			"comm":   newRec(bo, RecordComm, MiscCommExec).task(9, 9).str("split").trailer(9, 9, 7777).done(),
		}
		for name, want := range map[string]int64{"sample": 1e9, "fork": 6666, "comm": 7777} {
			rec := recs[name]
			got, ok := d.RecordTime(rec)
			if !ok || got != want {
				t.Errorf("%s: RecordTime %d %v, want %d", name, got, ok, want)
			}
			if e := d.Decode(rec, &Arena{}); e == nil || event.EventTime(e) != want {
				t.Errorf("%s: Decode's time %v, want %d", name, e, want)
			}
		}
		if _, ok := d.RecordTime([]byte{1, 2}); ok {
			t.Error("a torn record has a time")
		}
	})
}
