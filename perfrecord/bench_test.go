package perfrecord

import (
	"encoding/binary"
	"testing"

	"github.com/gprof-dev/gprof/event"
)

// ringBatch returns the format and the records of one drain of a ring in a
// dwarf recording (gprof record --call-graph dwarf, its default 16 KiB
// stack copies) of a process with four threads: 64 samples, each with a
// call chain of 8 to 23 user frames, registers and a stack copy of which
// 1.5 to 6 KiB is stack; amid them a thread started (FORK, COMM) and a
// program loaded (COMM at exec, four MMAP2 with build-ids).
func ringBatch(bo byteOrder) (Format, [][]byte) {
	f := liveFormat(dwarfSampleType)
	f.Regs = UserRegs("amd64", 1<<RegX86BX|1<<RegX86BP|1<<RegX86SP|1<<RegX86IP)
	const stackSize = 16384
	stack := make([]byte, stackSize)
	for i := range stack {
		stack[i] = byte(i * 7)
	}
	buildID := []byte("0123456789abcdefghij")
	var recs [][]byte
	t := uint64(5_000_000_000)
	for i := range 64 {
		tid := 1000 + i%4
		t += 250_000
		r := newRec(bo, RecordSample, MiscUser).u64(0x401000+uint64(i)*4).task(1000, tid).u64(t).cpu(i % 2).u64(1_000_000)
		frames := 8 + i%16
		r.u64(uint64(frames+1), ContextUser)
		for j := range frames {
			r.u64(0x401000 + uint64(j)*0x40 + uint64(i))
		}
		r.u64(2, 0x1, 0x7ffd0000+uint64(i)*16, 0x7ffcff00, 0x401000+uint64(i)*4) // abi, bx bp sp ip
		dyn := 1536 + (i*613)%4608
		r.u64(stackSize).raw(stack).u64(uint64(dyn))
		recs = append(recs, r.done())
		switch i {
		case 10:
			recs = append(recs,
				newRec(bo, RecordFork, 0).task(1000, 1000).task(1004, 1001).u64(t).trailer(1000, 1004, t).done(),
				newRec(bo, RecordComm, 0).task(1000, 1004).str("worker-4").trailer(1000, 1004, t).done())
		case 40:
			recs = append(recs,
				newRec(bo, RecordFork, 0).task(1005, 1000).task(1005, 1000).u64(t).trailer(1005, 1005, t).done(),
				newRec(bo, RecordComm, MiscCommExec).task(1005, 1005).str("helper").trailer(1005, 1005, t).done())
			for j, path := range []string{"/usr/bin/helper", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"} {
				start := 0x7f0000000000 + uint64(j)<<24
				recs = append(recs, newRec(bo, RecordMmap2, MiscUser|MiscMmapBuildID).task(1005, 1005).u64(start, 0x100000, 0x1000).
					raw([]byte{20, 0, 0, 0}).raw(buildID).u32(1|protExec, 2).str(path).trailer(1005, 1005, t).done())
			}
		}
	}
	return f, recs
}

// BenchmarkDecodeBatch decodes one ring batch into a reset arena per op,
// as the live backend does: after the first, it allocates nothing.
func BenchmarkDecodeBatch(b *testing.B) {
	f, recs := ringBatch(binary.NativeEndian)
	d := NewDecoder(binary.NativeEndian, f)
	a := &Arena{}
	events := make([]event.Event, 0, len(recs))
	b.ReportAllocs()
	for b.Loop() {
		events = events[:0]
		a.Reset()
		for _, rec := range recs {
			if e := d.Decode(rec, a); e != nil {
				events = append(events, e)
			}
		}
	}
	if len(events) != len(recs) {
		b.Fatalf("%d events of %d records", len(events), len(recs))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
}

// BenchmarkDecodeSample decodes a 24-frame fp sample.
func BenchmarkDecodeSample(b *testing.B) {
	bo := binary.NativeEndian
	d := NewDecoder(bo, liveFormat(fpSampleType))
	frames := make([]uint64, 24)
	for i := range frames {
		frames[i] = 0x401000 + uint64(i)*16
	}
	rec := fpSample(bo, MiscUser, 1, 1_000_000, frames...)
	a := &Arena{}
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d.Decode(rec, a)
		if i%1024 == 1023 {
			a.Reset()
		}
	}
}
